"""OpenAPI post-processing: problem+json error responses, and links between operations.

Routes document their specific problems (`404: session-not-found`, ...); this fills in the
problem+json content for each, and adds the 401/429 (authenticated routes), 413 (routes with
a body) and 415 (routes with a JSON body) every such route can answer, so generated clients know
the error shape everywhere.

`mode: stream` answers an invocation's 200 as SSE instead of JSON; that content type is added.

It also adds OpenAPI `links`: how the id a response creates addresses the next operations (a new
session's id, an uploaded artifact's version, a started invocation's id). Clients and tools read
them; the stateful schemathesis run follows them to chain real calls.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PROBLEM_CONTENT = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
OPEN_TAGS = {"health"}
COMMON = {
    "401": "Missing, invalid, expired or revoked credentials (unauthenticated).",
    "429": "Too many requests from this principal (rate-limited); see Retry-After.",
}

# The path parameters a follow-up call takes from the request that made the resource.
_USER = {"app_name": "$request.path.app_name", "user_id": "$request.path.user_id"}
_SESSION = {**_USER, "session_id": "$request.path.session_id"}
_NEW_SESSION = {**_USER, "session_id": "$response.body#/id"}
_ARTIFACT = {**_SESSION, "name": "$request.path.name"}
_NEW_VERSION = {**_ARTIFACT, "version": "$response.body#/version"}
# The header is set in every mode; the body differs (a result, an SSE stream, an invocation).
_NEW_INVOCATION = {**_SESSION, "invocation_id": "$response.header.X-Invocation-Id"}


@dataclass(frozen=True)
class Link:
    """An OpenAPI link: the operation a response leads to, and where its parameters come from."""

    operation_id: str
    parameters: dict[str, str]
    description: str
    request_body: dict[str, Any] | None = None

    def render(self) -> dict[str, Any]:
        """The link object of the spec."""
        link: dict[str, Any] = {
            "operationId": self.operation_id,
            "parameters": dict(self.parameters),
            "description": self.description,
        }
        if self.request_body is not None:
            link["requestBody"] = self.request_body
        return link


_SESSION_LINKS = {
    "GetSession": Link("get_session", _NEW_SESSION, "The session just created."),
    # The ETag makes the first PATCH conditional on nothing having changed since the create.
    "UpdateSession": Link(
        "update_session",
        {**_NEW_SESSION, "header.if-match": "$response.header.ETag"},
        "Apply a state delta to it.",
    ),
    "DeleteSession": Link("delete_session", _NEW_SESSION, "Delete it."),
    "ListSessions": Link("list_sessions", _USER, "The user's sessions, this one among them."),
    "UploadArtifact": Link("upload_artifact_content", _NEW_SESSION, "Upload an artifact to it."),
    "CreateInvocation": Link(
        "create_invocation",
        _NEW_SESSION,
        "Run the app on it, for example with a first question.",
        {"newMessage": {"role": "user", "parts": [{"text": "What is the capital of France?"}]}},
    ),
}
_ARTIFACT_LINKS = {
    "ListArtifactVersions": Link("list_artifact_versions", _ARTIFACT, "The artifact's versions."),
    "LoadArtifactVersion": Link("load_artifact_version", _NEW_VERSION, "The version stored."),
    "DownloadArtifactVersion": Link("download_artifact_version", _NEW_VERSION, "Its raw bytes."),
    "DeleteArtifact": Link("delete_artifact", _ARTIFACT, "Delete every version of the artifact."),
}
_INVOCATION_LINKS = {
    "GetInvocation": Link("get_invocation", _NEW_INVOCATION, "The invocation's status."),
    "CancelInvocation": Link("cancel_invocation", _NEW_INVOCATION, "Cancel it."),
    "StreamInvocationEvents": Link("stream_invocation_events", _NEW_INVOCATION, "Its events."),
}
#: (operationId, status) of a response -> the links it offers.
LINKS: dict[tuple[str, str], dict[str, Link]] = {
    ("create_session", "201"): _SESSION_LINKS,
    ("create_session_with_id", "201"): _SESSION_LINKS,
    ("upload_artifact_content", "201"): _ARTIFACT_LINKS,
    ("create_invocation", "200"): _INVOCATION_LINKS,
    ("create_invocation", "202"): _INVOCATION_LINKS,
}

# Operations whose 200 is an SSE stream in one of their modes (`mode: stream`), besides JSON.
STREAMING = {"create_invocation"}
SSE_CONTENT: dict[str, Any] = {"text/event-stream": {}}


def document_problems(openapi: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """Wrap FastAPI's `openapi()`: problem+json error responses, and the operations' links."""

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
                body_types = operation.get("requestBody", {}).get("content", {})
                if "application/json" in body_types:
                    responses.setdefault(
                        "415",
                        {"description": "Body not sent as JSON (unsupported-media-type)."},
                    )
                operation_id = operation.get("operationId", "")
                if operation_id in STREAMING and "200" in responses:
                    responses["200"].setdefault("content", {}).update(SSE_CONTENT)
                for code, response in responses.items():
                    if code[0] in "45" and "content" not in response:
                        response["content"] = dict(PROBLEM_CONTENT)
                    links = LINKS.get((operation_id, code))
                    if links:
                        response["links"] = {name: link.render() for name, link in links.items()}
        return spec

    return wrapper
