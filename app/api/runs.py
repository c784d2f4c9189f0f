"""ADK's run routes: `POST /run` (JSON array of events) and `POST /run_sse` (SSE).

Unlike ADK: an unknown session is 404 and a problem before the run starts is problem+json; a
failure after streaming started is a typed `error` frame (ADK's `{"error": ...}`), the last one.
Every event frame's `id:` is its seq and every event names its `invocationId` (also in the
`X-Invocation-Id` header), so a client cut off reads the rest from
`GET .../invocations/{iid}/events` with `Last-Event-ID`. Concurrent runs on one session queue
(`enqueue`) rather than interleave, since ADK clients do not know about `session-busy`.

`invocationId` continues that invocation of the session (`newMessage` then optional) and the
answer holds the events of this run only. Unlike ADK, which runs under any id it is given and
re-runs finished invocations from their first message, only these can be continued: a failed or
cancelled invocation, and a completed one that waits for the client (its last event lists
long-running calls, such as a tool's `adk_request_credential`, that nothing answered yet) when
`newMessage` answers at least one of them with a function response of that id. An unknown id is
404 `invocation-not-found`, any other 409 `invocation-not-resumable`.
"""

from collections.abc import AsyncGenerator
from typing import Any, Literal

import orjson
from fastapi import APIRouter
from fastapi.responses import Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.api.deps import (
    IdempotencyKeyHeader,
    InvocationManagerDep,
    PrincipalDep,
    RegistryDep,
    SettingsDep,
)
from app.api.json_body import JsonRoute
from app.api.streaming import adk_error_frame, adk_event_json, adk_frames, ending_with_problem
from app.errors import InvalidRequest, StoredProblem
from app.invocations.manager import RunHandle
from app.invocations.models import (
    CreateInvocationRequest,
    ResumeInvocationRequest,
    RunAgentRequest,
    RunConfigRequest,
    SessionRef,
)
from app.sessions.models import Event
from app.wire import validate_id

router = APIRouter(route_class=JsonRoute, tags=["runs"])


def _ref(body: RunAgentRequest, registry: RegistryDep, principal: PrincipalDep) -> SessionRef:
    principal.check_app(body.app_name)
    registry.require(body.app_name)
    principal.check_user(body.user_id)
    principal.check_state_delta(body.state_delta)
    validate_id("userId", body.user_id)
    validate_id("sessionId", body.session_id)
    if body.invocation_id is not None:
        validate_id("invocationId", body.invocation_id)
    return SessionRef(body.app_name, body.user_id, body.session_id)


async def _launch(
    manager: InvocationManagerDep,
    ref: SessionRef,
    body: RunAgentRequest,
    mode: Literal["wait", "stream"],
    idempotency_key: str | None,
) -> RunHandle:
    """A new invocation for the message, or the resumed one `invocationId` names."""
    fields: dict[str, Any] = {
        "new_message": body.new_message,
        "state_delta": body.state_delta,
        "custom_metadata": body.custom_metadata,
        "run_config": RunConfigRequest(streaming_mode="sse" if body.streaming else "none"),
        "mode": mode,
        "multitask_strategy": "enqueue",
    }
    if body.invocation_id is not None:
        resume = ResumeInvocationRequest(**fields)
        return await manager.resume(ref, body.invocation_id, resume)
    if body.new_message is None:  # pragma: no cover - RunAgentRequest refuses it
        raise InvalidRequest("newMessage is required unless invocationId names an invocation.")
    return await manager.start(
        ref, CreateInvocationRequest(**fields), idempotency_key=idempotency_key
    )


RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"description": "Unknown app or session, or `invocationId` names no invocation of it."},
    409: {
        "description": "`invocationId` names an invocation that cannot be continued: it did "
        "not fail, was not cancelled and is not waiting for the answers `newMessage` gives "
        "(invocation-not-resumable), or the session stayed busy (session-busy)."
    },
}


@router.post(
    "/run",
    response_model=list[Event],
    summary="Run the agent for one message and return its events (ADK)",
    responses=RESPONSES,
)
async def run_agent(
    body: RunAgentRequest,
    registry: RegistryDep,
    manager: InvocationManagerDep,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """The events the run produced, without the user's own message, as ADK answers."""
    handle = await _launch(manager, _ref(body, registry, principal), body, "wait", idempotency_key)
    final = await manager.wait(handle)
    if final.error is not None:
        raise StoredProblem(final.error)
    events = await manager.persisted_events(handle)
    answer = [adk_event_json(e) for e in events if e.author != "user"]
    return Response(orjson.dumps(answer), media_type="application/json")


@router.post(
    "/run_sse",
    summary="Run the agent for one message, streaming its events (ADK SSE)",
    responses=RESPONSES,
    response_class=EventSourceResponse,
)
async def run_agent_sse(
    body: RunAgentRequest,
    registry: RegistryDep,
    manager: InvocationManagerDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKeyHeader = None,
) -> EventSourceResponse:
    """ADK Event JSON per `data:` line (`id:` carries the seq); `{"error": ...}` on failure."""
    handle = await _launch(
        manager, _ref(body, registry, principal), body, "stream", idempotency_key
    )
    return EventSourceResponse(
        ending_with_problem(
            _adk_stream(manager, handle), adk_error_frame, invocation_id=handle.invocation.id
        ),
        ping=settings.sse_heartbeat_seconds,
        headers={"X-Invocation-Id": handle.invocation.id},
        sep="\n",
    )


async def _adk_stream(
    manager: InvocationManagerDep, handle: RunHandle
) -> AsyncGenerator[ServerSentEvent, None]:
    async for item in manager.follow(handle):
        if item.kind == "done":
            if item.invocation is not None and item.invocation.error is not None:
                yield adk_error_frame(item.invocation.error)
            return
        if item.event is not None and item.event.author != "user":
            for frame in adk_frames(item.event):
                yield frame
