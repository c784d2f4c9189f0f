"""OpenAPI post-processing: every documented error response is RFC 9457 problem+json.

Routes document their specific problems (`404: session-not-found`, ...); this fills in the
problem+json content for each, and adds the 401/429 (authenticated routes) and 413 (routes with
a body) every such route can answer, so generated clients know the error shape everywhere.
"""

from collections.abc import Callable
from typing import Any

PROBLEM_CONTENT = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
OPEN_TAGS = {"health"}
COMMON = {
    "401": "Missing, invalid, expired or revoked credentials (unauthenticated).",
    "429": "Too many requests from this principal (rate-limited); see Retry-After.",
}


def document_problems(openapi: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """Wrap FastAPI's `openapi()` so error responses carry the problem+json schema."""

    def wrapper() -> dict[str, Any]:
        spec = openapi()
        for methods in spec.get("paths", {}).values():
            for method, operation in methods.items():
                responses = operation.setdefault("responses", {})
                if not set(operation.get("tags", [])) & OPEN_TAGS:
                    for code, description in COMMON.items():
                        responses.setdefault(code, {"description": description})
                if method in {"post", "put", "patch"}:
                    responses.setdefault(
                        "413", {"description": "Request body too large (payload-too-large)."}
                    )
                for code, response in responses.items():
                    if code[0] in "45" and "content" not in response:
                        response["content"] = dict(PROBLEM_CONTENT)
        return spec

    return wrapper
