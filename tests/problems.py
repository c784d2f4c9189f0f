"""Assertions on RFC 9457 problem responses, shared by the HTTP tests."""

from collections.abc import Mapping
from typing import Any, Protocol

PROBLEM = "application/problem+json"


class ResponseLike(Protocol):
    """What httpx's and the TestClient's responses have in common."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...


def assert_problem(response: ResponseLike, status: int, problem_type: str) -> None:
    """The response is problem+json with the given status and stable `type`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["type"] == problem_type
    assert body["status"] == status
    assert body["title"]
