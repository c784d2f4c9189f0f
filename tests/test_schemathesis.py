"""Property-based API testing with schemathesis against a live server, from the committed spec.

Every operation gets a bounded number of generated requests (seed and size from the environment,
see tests/fuzz), aimed at real resources: the path parameters are pinned to an app, a session, an
artifact and an invocation that exist. Every response must be documented, match its schema and
content type, and never be a 5xx; methods a path does not list are 405.
"""

import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.core.parameters import ParameterLocation

from tests.fuzz import (
    APP,
    ARTIFACT,
    EXAMPLES,
    SESSION,
    SPEC,
    USER,
    FuzzTarget,
    start_target,
    stateless_config,
)

schema = schemathesis.openapi.from_path(SPEC, config=stateless_config())


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    """A live server with the shipped apps and the resources the run is pinned to."""
    fuzz_target = start_target(tmp_path_factory.mktemp("fuzz"))
    yield fuzz_target
    fuzz_target.server.stop()
    if "AGENTD_FUZZ_KEEP_LOG" in os.environ:
        sys.stderr.write(fuzz_target.server.log.read_text())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
def test_api_conforms_to_its_schema(case: schemathesis.Case[Any], target: FuzzTarget) -> None:
    # The invocation's id exists only once the server made it, after the config was read (and
    # the coverage phase's cases built): it is pinned here, except where the path is the test.
    params = case.path_parameters
    bad_path = case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)
    if params and "invocation_id" in params and not bad_path:
        params["invocation_id"] = target.invocation_id
    case.call_and_validate(base_url=target.url, timeout=30)


def test_a_method_the_path_does_not_list_is_405_even_where_a_catch_all_route_matches(
    target: FuzzTarget,
) -> None:
    # `DELETE .../artifacts/{name}` would take `notes.md/versions` as a name and refuse it (422).
    artifact = f"{target.url}/apps/{APP}/users/{USER}/sessions/{SESSION}/artifacts/{ARTIFACT}"
    for method, path, allow in [
        ("DELETE", "/versions", "GET"),
        ("DELETE", "/versions/0/metadata", "GET"),
        ("PUT", "/versions/0/content", "GET"),
        ("POST", "/content", "GET, PUT"),
    ]:
        answer = httpx.request(method, artifact + path)
        assert (answer.status_code, answer.headers["Allow"]) == (405, allow), (method, path)
        assert answer.json()["type"] == "http-method-not-allowed"


def test_every_422_carries_errors_as_the_spec_documents(target: FuzzTarget) -> None:
    session = f"{target.url}/apps/{APP}/users/{USER}/sessions/{SESSION}"
    ours = httpx.patch(session, headers={"If-Match": "nope"}, json={"stateDelta": {}})
    assert ours.status_code == 422
    assert ours.json()["type"] == "invalid-request"
    assert ours.json()["errors"] == [
        {"loc": [], "msg": ours.json()["detail"], "type": "invalid_request"}
    ]
    validation = httpx.patch(session, json={"stateDelta": 1})
    assert validation.status_code == 422
    assert validation.json()["errors"][0]["loc"] == ["body", "stateDelta"]
