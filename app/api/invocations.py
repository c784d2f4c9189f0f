"""Invocation routes: create (wait | stream | background), get, list, cancel, follow events.

`Last-Event-ID` (or `?afterSeq=`) on the events stream resumes after that seq: the client gets
every later persisted event exactly once, then live ones, then `done`. A stream the server
cannot go on with (the database went away) ends with an `error` frame and no `done`; the run
goes on, and a reconnect with `Last-Event-ID` gets the rest.
"""

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response, status
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.api.deps import (
    IdempotencyKeyHeader,
    InvocationManagerDep,
    KnownApp,
    PrincipalDep,
    SessionIdPath,
    SettingsDep,
    UserIdPath,
    clamp_page_size,
)
from app.api.json_body import JsonRoute
from app.api.streaming import ending_with_problem, invocation_error_frame, invocation_frames
from app.errors import AgentdError, InvalidRequest, StoredProblem
from app.invocations.manager import RunHandle
from app.invocations.models import (
    AnswerInvocationRequest,
    CreateInvocationRequest,
    Invocation,
    InvocationPage,
    InvocationResult,
    SessionRef,
)
from app.wire import ID_PATTERN, MAX_SEQ

logger = logging.getLogger("agentd.sse")

router = APIRouter(
    route_class=JsonRoute,
    prefix="/apps/{app_name}/users/{user_id}/sessions/{session_id}/invocations",
    tags=["invocations"],
)

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such session or invocation."}
}


async def session_ref(app: KnownApp, user_id: UserIdPath, session_id: SessionIdPath) -> SessionRef:
    """The addressed session."""
    return SessionRef(app.name, user_id, session_id)


RefDep = Annotated[SessionRef, Depends(session_ref)]
#: What agentd issues (`e-<uuid>`) matches; a value no invocation can have (a NUL, which
#: PostgreSQL refuses in a query) is a 422, not a database error.
InvocationIdPath = Annotated[
    str, Path(pattern=ID_PATTERN, max_length=128, description="Invocation id.")
]


@router.post(
    "",
    summary="Run the app for a new message (wait, stream or background)",
    status_code=status.HTTP_200_OK,
    response_model=InvocationResult,
    responses={
        **NOT_FOUND,
        202: {"description": "Accepted (mode background).", "model": Invocation},
        409: {"description": "Another invocation runs on the session (session-busy)."},
        422: {"description": "Invalid body, or Idempotency-Key reused (idempotency-key-reused)."},
    },
)
async def create_invocation(
    ref: RefDep,
    body: CreateInvocationRequest,
    manager: InvocationManagerDep,
    settings: SettingsDep,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """Start an invocation; `wait` returns its events, `stream` follows it, `background` 202."""
    principal.check_state_delta(body.state_delta)
    handle = await manager.start(ref, body, idempotency_key=idempotency_key)
    location = str(
        request.url_for("get_invocation", **request.path_params, invocation_id=handle.invocation.id)
    )
    headers = {"Location": location, "X-Invocation-Id": handle.invocation.id}
    if body.mode == "background":
        return JSONResponse(handle.invocation.to_wire(), status_code=202, headers=headers)
    if body.mode == "stream":
        return EventSourceResponse(
            _stream(manager, handle, 0, cancel_on_disconnect=body.on_disconnect == "cancel"),
            ping=settings.sse_heartbeat_seconds,
            headers=headers,
            sep="\n",
        )
    final = await manager.wait(handle)
    if final.error is not None:
        raise StoredProblem(final.error)
    events = await manager.persisted_events(handle)
    result = InvocationResult(invocation=final, events=events)
    return JSONResponse(result.to_wire(), headers=headers)


async def _stream(
    manager: InvocationManagerDep, handle: RunHandle, after_seq: int, *, cancel_on_disconnect: bool
) -> AsyncIterator[ServerSentEvent]:
    frames = ending_with_problem(
        invocation_frames(manager.follow(handle, after_seq=after_seq)),
        invocation_error_frame,
        invocation_id=handle.invocation.id,
    )
    finished = False  # with `done` or an error frame: only a client gone away cancels
    try:
        async with aclosing(frames):
            async for frame in frames:
                yield frame
        finished = True
    finally:
        if cancel_on_disconnect and not finished:
            await _cancel_for_disconnect(manager, handle)


async def _cancel_for_disconnect(manager: InvocationManagerDep, handle: RunHandle) -> None:
    # The client is gone, so a failure here has nobody to tell: it is logged, not raised into
    # the server (which would log an ASGI exception). The run then goes on.
    try:
        await manager.cancel(handle.ref, handle.invocation.id)
    except AgentdError as exc:
        context = {"invocation_id": handle.invocation.id}
        logger.warning("cancel on disconnect failed: %s", exc.type, extra=context)


@router.get(
    "",
    response_model_exclude_none=True,
    summary="List the session's invocations (newest first)",
    responses=NOT_FOUND,
)
async def list_invocations(
    ref: RefDep,
    manager: InvocationManagerDep,
    settings: SettingsDep,
    page_size: Annotated[int | None, Query(alias="pageSize", ge=1, le=10_000)] = None,
    page_token: Annotated[str | None, Query(alias="pageToken", max_length=1024)] = None,
) -> InvocationPage:
    """A page of invocations with their status."""
    size = clamp_page_size(page_size, settings)
    invocations, token = await manager.list(ref, page_size=size, page_token=page_token)
    return InvocationPage(invocations=invocations, next_page_token=token)


@router.get(
    "/{invocation_id}",
    response_model_exclude_none=True,
    summary="Get an invocation's status",
    responses=NOT_FOUND,
)
async def get_invocation(
    ref: RefDep, invocation_id: InvocationIdPath, manager: InvocationManagerDep
) -> Invocation:
    """Status (queued, running, completed, failed, cancelled) and the error as a problem."""
    return await manager.get(ref, invocation_id)


@router.post(
    "/{invocation_id}/cancel",
    response_model_exclude_none=True,
    summary="Cancel an invocation",
    responses=NOT_FOUND,
)
async def cancel_invocation(
    ref: RefDep, invocation_id: InvocationIdPath, manager: InvocationManagerDep
) -> Invocation:
    """Stop the run at its next step; nothing half-done is persisted. One waiting in
    `requires_action` ends `cancelled` at once, its open calls answered with the cancellation;
    an ended one is returned unchanged."""
    return await manager.cancel(ref, invocation_id)


@router.post(
    "/{invocation_id}/resume",
    response_model_exclude_none=True,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Answer what an invocation waits for (confirmations, results) and continue it",
    responses={
        404: {"description": "No such session, invocation, or function call of it."},
        409: {
            "description": "The invocation waits for no answer (invocation-not-resumable), "
            "or a call was answered already (function-call-answered)."
        },
    },
)
async def resume_invocation(
    ref: RefDep,
    invocation_id: InvocationIdPath,
    body: AnswerInvocationRequest,
    manager: InvocationManagerDep,
) -> Invocation:
    """Confirm or deny calls and send long-running results; the run continues in the background
    under the same id (follow it with `GET .../events`). Calls still unanswered keep it in
    `requires_action` with the rest listed in `requiredAction`."""
    handle = await manager.answer(ref, invocation_id, body)
    return handle.invocation


@router.get(
    "/{invocation_id}/events",
    summary="Follow an invocation's events (SSE, resumable with Last-Event-ID)",
    responses=NOT_FOUND,
    response_class=EventSourceResponse,
)
async def stream_invocation_events(
    ref: RefDep,
    invocation_id: InvocationIdPath,
    manager: InvocationManagerDep,
    settings: SettingsDep,
    last_event_id: Annotated[str | None, Header(max_length=32)] = None,
    after_seq: Annotated[int | None, Query(alias="afterSeq", ge=0, le=MAX_SEQ)] = None,
) -> EventSourceResponse:
    """Persisted events after the given seq, then live ones, then `done`."""
    start = after_seq or 0
    if last_event_id:
        if not last_event_id.isdigit() or int(last_event_id) > MAX_SEQ:
            raise InvalidRequest("Last-Event-ID must be the seq of an event.")
        start = int(last_event_id)
    handle = await manager.attach(ref, invocation_id)
    return EventSourceResponse(
        _stream(manager, handle, start, cancel_on_disconnect=False),
        ping=settings.sse_heartbeat_seconds,
        sep="\n",
    )
