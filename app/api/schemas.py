"""Request and response bodies of the HTTP API that are not domain wire models."""

from typing import Any, Literal

from pydantic import Field

from app.sessions.models import Event
from app.wire import ID_PATTERN, WireModel


class CreateSessionRequest(WireModel):
    """ADK's CreateSessionRequest: optional id and initial state."""

    session_id: str | None = Field(default=None, pattern=ID_PATTERN, max_length=128)
    state: dict[str, Any] | None = None


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
