"""Event JSON and SSE frames for the run routes (sse-starlette does the SSE protocol).

Two wire forms. ADK's `/run` and `/run_sse` carry ADK Event JSON only: no `seq` key, `data:`
lines that ADK clients (the dev UI among them) parse as events, errors as ADK's `{"error": ...}`,
and, as ADK does, a function-response event that saved artifacts is sent twice (first with an
empty artifactDelta, then without content carrying the delta). Our invocation streams carry `seq`
as the SSE `id`, typed `event:` names (event, partial, error, done) and a final `done` frame.
"""

from collections.abc import AsyncIterator
from typing import Any

import orjson
from sse_starlette import ServerSentEvent

from app.invocations.channel import StreamItem
from app.sessions.models import Event


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


def adk_error_frame(problem: dict[str, Any]) -> ServerSentEvent:
    """ADK's error frame (`{"error": "..."}`), typed `error` for clients that read event names."""
    message = problem.get("detail") or problem.get("title") or "error"
    return ServerSentEvent(
        data=_dumps({"error": message, "type": problem.get("type")}), event="error"
    )


async def invocation_frames(items: AsyncIterator[StreamItem]) -> AsyncIterator[ServerSentEvent]:
    """Our invocation stream: `id: <seq>` events, partials, a typed error, then `done`."""
    async for item in items:
        if item.kind == "done" and item.invocation is not None:
            final = item.invocation.to_wire()
            if item.invocation.error is not None:
                yield ServerSentEvent(data=_dumps(item.invocation.error), event="error")
            yield ServerSentEvent(data=_dumps(final), event="done")
        elif item.event is not None:
            frame_id = None if item.kind == "partial" else str(item.event.seq)
            yield ServerSentEvent(data=_dumps(item.event.to_wire()), id=frame_id, event=item.kind)
