"""ADK dev UI's Trace pane (`adk web`'s `/dev/apps/{app}/debug/trace/...`).

The shapes are google-adk 2.13's (`cli/dev_server.py`: `get_session_trace`, `get_trace_dict`;
`telemetry/_web_ui.py`: `WebUiSpan`): a session's spans as a list of
`{name, start_time, end_time, trace_id, span_id, parent_span_id, attributes, logs}`, and an
event's span as its attributes plus `trace_id` and `span_id`. The spans come from the bounded,
per-process store agentd's runs fill (app.observability.spans); a principal bound to one user
sees only that user's spans.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel

from app.api.deps import KnownApp, PrincipalDep, SessionIdPath
from app.api.json_body import JsonRoute
from app.observability.spans import Span, TraceNotFound, span_store

router = APIRouter(route_class=JsonRoute, prefix="/dev/apps/{app_name}/debug", tags=["dev-ui"])


class WebUiSpan(BaseModel):
    """One span as ADK's dev UI reads it (times in Unix nanoseconds)."""

    name: str
    start_time: int | None
    end_time: int | None
    trace_id: int
    span_id: int
    parent_span_id: int | None
    attributes: dict[str, Any]
    logs: list[dict[str, Any]] = []


def _visible(span: Span, principal: PrincipalDep) -> bool:
    return principal.user_id is None or principal.user_id == span.user_id


@router.get(
    "/trace/session/{session_id}",
    response_model=list[WebUiSpan],
    summary="The spans of a session's invocations (ADK dev UI)",
    responses={404: {"description": "No such app (app-not-found)."}},
)
async def get_session_trace(
    app: KnownApp, session_id: SessionIdPath, principal: PrincipalDep
) -> list[dict[str, Any]]:
    """Every kept span of the session's traces, oldest first; `[]` when none is kept (as ADK)."""
    spans = span_store().session_spans(app.name, session_id)
    return [span.as_web_ui_span() for span in spans if _visible(span, principal)]


@router.get(
    "/trace/{event_id}",
    summary="The span that produced an event (ADK dev UI)",
    responses={404: {"description": "No such app (app-not-found) or span (trace-not-found)."}},
)
async def get_trace_dict(
    app: KnownApp,
    event_id: Annotated[str, Path(max_length=128, description="Event id.")],
    principal: PrincipalDep,
) -> dict[str, Any]:
    """The model call's or tool call's span attributes, with `trace_id` and `span_id`."""
    span = span_store().event_span(app.name, event_id)
    if span is None or not _visible(span, principal):
        raise TraceNotFound(f"No recorded span produced event {event_id!r}.")
    return {**span.resolved_attributes(), "trace_id": span.trace_id, "span_id": span.span_id}
