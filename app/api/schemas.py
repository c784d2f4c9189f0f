"""Request and response bodies of the HTTP API that are not domain wire models."""

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from app.sessions.models import Event
from app.wire import ID_PATTERN, WireModel

#: How an event to import is documented: as the Event the responses define.
_EVENT_SCHEMA = WithJsonSchema({"$ref": "#/components/schemas/Event"})


class CreateSessionRequest(WireModel):
    """ADK's CreateSessionRequest: optional id, initial state, and events to import."""

    session_id: str | None = Field(default=None, pattern=ID_PATTERN, max_length=128)
    state: dict[str, Any] | None = None
    # Documented as ADK's list of Event but kept as parsed JSON: the route validates the events
    # one by one in time slices (app.api.session_import), so a large import never holds up the
    # event loop in one validation call.
    events: list[Annotated[Any, _EVENT_SCHEMA]] | None = Field(
        default=None,
        description="Events to import (e.g. a GET's; their `seq` is ignored), stored in this "
        "order as seq 1..N with their ids, in the transaction that creates the session; their "
        "state deltas are applied after `state`. Any invalid event is a 422 naming it (413 "
        "over the size limits), and nothing is stored. Artifact deltas stay on the events as "
        "recorded, but no artifact versions are created (their bytes are not imported). At "
        "most AGENTD_MAX_IMPORT_EVENTS events (413 import-too-large above).",
    )


class UpdateSessionRequest(WireModel):
    """ADK's UpdateSessionRequest: a state delta recorded as a user event."""

    state_delta: dict[str, Any]


class EventPageResponse(WireModel):
    """One page of a session's events."""

    events: list[Event]
    next_page_token: str | None = None


class AppSummary(WireModel):
    """One entry of `GET /list-apps?detailed=true`, with every key ADK 2.13 writes."""

    name: str
    root_agent_name: str
    description: str = ""
    language: str = "python"
    #: ADK flags apps whose agent drives a computer-use tool; agentd has none.
    is_computer_use: bool = False
    #: ADK's agent graph for visual builders; always null there for code-defined apps.
    agents: list[str] | None = None


class ListAppsResponse(WireModel):
    """`GET /list-apps?detailed=true`."""

    apps: list[AppSummary]


class HealthResponse(WireModel):
    """Liveness / readiness answer."""

    status: str
    blob_store: Literal["local", "s3", "memory"] | None = Field(
        default=None,
        description="`/health` only: where artifact bytes live (AGENTD_BLOB_STORE). `local` is one "
        "folder: replicas must share it.",
    )


class VersionResponse(WireModel):
    """Build information: ADK's keys (`language_version` snake_case, as ADK writes it), then
    agentd's own."""

    version: str
    language: str = "python"
    language_version: str = Field(alias="language_version")
    adk_compatibility: str
