"""Wire models of runs (ADK's RunAgentRequest, our invocation request and resource) and the
session address every invocation operation takes."""

import enum
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from app.sessions.models import Event
from app.wire import ClientContent, WireModel


@dataclass(frozen=True)
class SessionRef:
    """A session addressed by the API."""

    app_name: str
    user_id: str
    session_id: str


class InvocationStatus(enum.StrEnum):
    """Where an invocation is in its life."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether the invocation has ended."""
        return self in (self.COMPLETED, self.FAILED, self.CANCELLED)


class RunAgentRequest(WireModel):
    """ADK's `/run` and `/run_sse` body."""

    app_name: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    session_id: str = Field(max_length=128)
    new_message: ClientContent
    streaming: bool = False
    state_delta: dict[str, Any] | None = None
    invocation_id: str | None = Field(default=None, max_length=128)
    custom_metadata: dict[str, Any] | None = None


class RunConfigRequest(WireModel):
    """The run options a client may set (capped by the server's limits)."""

    max_llm_calls: int | None = Field(default=None, ge=1)
    streaming_mode: Literal["none", "sse"] | None = None


class CreateInvocationRequest(WireModel):
    """`POST .../invocations`."""

    new_message: ClientContent
    state_delta: dict[str, Any] | None = None
    run_config: RunConfigRequest | None = None
    mode: Literal["wait", "stream", "background"] = "wait"
    multitask_strategy: Literal["reject", "enqueue"] = "reject"
    on_disconnect: Literal["continue", "cancel"] = "continue"


class Invocation(WireModel):
    """An invocation as a resource."""

    id: str
    app_name: str
    user_id: str
    session_id: str
    status: InvocationStatus
    mode: str
    create_time: float
    start_time: float | None = None
    end_time: float | None = None
    error: dict[str, Any] | None = None
    cancel_requested: bool = False


class InvocationResult(WireModel):
    """A finished invocation and the events it persisted (mode `wait`)."""

    invocation: Invocation
    events: list[Event]


class InvocationPage(WireModel):
    """One page of a session's invocations, newest first."""

    invocations: list[Invocation]
    next_page_token: str | None = None
