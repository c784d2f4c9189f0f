"""Event JSON and SSE frames for the run routes (sse-starlette does the SSE protocol).

Two wire forms. ADK's `/run` and `/run_sse` carry ADK Event JSON only: no `seq` key, `data:`
lines that ADK clients (the dev UI among them) parse as events, errors as ADK's `{"error": ...}`,
and, as ADK does, a function-response event that saved artifacts is sent twice (first with an
empty artifactDelta, then without content carrying the delta). Our invocation streams carry `seq`
as the SSE `id`, typed `event:` names (event, partial, error, done) and a final `done` frame.

Once a stream's status line is sent, an error can no longer be a problem+json answer, and an
exception escaping the frame generator cuts the response (the client reads a truncated body, the
server logs "Exception in ASGI application"). `ending_with_problem` wraps every stream's frames:
whatever raises while streaming (the database going away while a follower reads the log, most
often) becomes one error frame carrying the problem, and the stream ends cleanly. The invocation
goes on; a client reconnects with `Last-Event-ID` (the last `id:` it read) to
`GET .../invocations/{iid}/events` for the rest.
"""

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

import orjson
from sse_starlette import ServerSentEvent

from app.errors import AgentdError, InternalError
from app.invocations.channel import StreamItem
from app.sessions.models import Event

logger = logging.getLogger("agentd.sse")

#: Builds a stream's error frame from a problem.
ErrorFrame = Callable[[Mapping[str, Any]], ServerSentEvent]


def adk_event_json(event: Event) -> dict[str, Any]:
    """An event exactly as ADK serialises it (camelCase, no nulls, no `seq`)."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"seq"})


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def adk_frames(event: Event) -> list[ServerSentEvent]:
    """The `/run_sse` frame(s) of one event."""
    frame_id = str(event.seq) if event.seq is not None else None
    kind = "partial" if event.partial else "event"
    body = adk_event_json(event)
    delta = body["actions"].get("artifactDelta") or {}
    if not delta or "content" not in body:
        return [ServerSentEvent(data=_dumps(body), id=frame_id, event=kind)]
    with_content = {**body, "actions": {**body["actions"], "artifactDelta": {}}}
    delta_only = {k: v for k, v in body.items() if k not in ("content",)}
    return [
        ServerSentEvent(data=_dumps(with_content), id=frame_id, event=kind),
        ServerSentEvent(data=_dumps(delta_only), id=frame_id, event=kind),
    ]


def adk_error_frame(problem: Mapping[str, Any]) -> ServerSentEvent:
    """ADK's error frame (`{"error": "..."}`), typed `error` for clients that read event names."""
    message = problem.get("detail") or problem.get("title") or "error"
    return ServerSentEvent(
        data=_dumps({"error": message, "type": problem.get("type")}), event="error"
    )


def invocation_error_frame(problem: Mapping[str, Any]) -> ServerSentEvent:
    """Our invocation streams' error frame: the problem JSON, typed `error`."""
    return ServerSentEvent(data=_dumps(problem), event="error")


async def invocation_frames(
    items: AsyncIterator[StreamItem],
) -> AsyncGenerator[ServerSentEvent, None]:
    """Our invocation stream: `id: <seq>` events, partials, a typed error, then `done`."""
    async for item in items:
        if item.kind == "done" and item.invocation is not None:
            final = item.invocation.to_wire()
            if item.invocation.error is not None:
                yield invocation_error_frame(item.invocation.error)
            yield ServerSentEvent(data=_dumps(final), event="done")
        elif item.event is not None:
            frame_id = None if item.kind == "partial" else str(item.event.seq)
            yield ServerSentEvent(data=_dumps(item.event.to_wire()), id=frame_id, event=item.kind)


async def ending_with_problem(
    frames: AsyncGenerator[ServerSentEvent, None], error_frame: ErrorFrame, *, invocation_id: str
) -> AsyncGenerator[ServerSentEvent, None]:
    """The frames; if producing them raises, one error frame with the problem, then the end.

    An `AgentdError` sends its own problem (a 503's `Retry-After` as the frame's `retry:`, in
    ms); anything else is logged here, once, and sent as `internal-error`. A disconnect
    (cancellation) is not an error: it passes through, and `frames` is closed at once.
    """
    context = {"invocation_id": invocation_id}
    async with aclosing(frames):
        try:
            async for frame in frames:
                yield frame
            return
        except AgentdError as exc:
            logger.warning("stream ended early: %s (%s)", exc.type, exc.detail, extra=context)
            problem, retry_after = exc.marshal(), (exc.headers or {}).get("Retry-After")
        except Exception:
            logger.exception("stream failed", extra=context)
            problem, retry_after = InternalError().marshal(), None
    frame = error_frame(problem)
    if retry_after is not None and retry_after.isdigit():
        frame.retry = int(retry_after) * 1000
    yield frame
