"""Wire models of sessions and events, shaped exactly like ADK's JSON plus our `seq`.

camelCase on the wire, either casing accepted on input, `None` fields omitted on output. Content
and model metadata are google-genai `types`, the same classes ADK uses, so events round-trip
between the two unchanged. Unknown input fields are ignored rather than rejected so that events
written by a newer ADK still load.
"""

import time
import uuid
from typing import Any

from google.genai import types
from pydantic import BaseModel, ConfigDict, Field

from app.wire import WireModel


class NodeInfo(WireModel):
    """ADK 2.x: where in the agent graph an event was produced (empty path for user events)."""

    path: str = ""


class EventCompaction(WireModel):
    """ADK's record of a compaction: the summary standing for the events it covers.

    Exactly ADK's three fields, so ADK clients parse it; agentd keeps the covered seq range
    beside it, in the compaction event's `customMetadata` (`app.agents.compaction`).
    """

    start_timestamp: float
    end_timestamp: float
    compacted_content: types.Content


class EventActions(WireModel):
    """Side effects an event carries: state and artifact deltas, control flow requests."""

    skip_summarization: bool | None = None
    state_delta: dict[str, Any] = Field(default_factory=dict)
    artifact_delta: dict[str, int] = Field(default_factory=dict)
    transfer_to_agent: str | None = None
    escalate: bool | None = None
    requested_auth_configs: dict[str, Any] = Field(default_factory=dict)
    requested_tool_confirmations: dict[str, Any] = Field(default_factory=dict)
    end_of_agent: bool | None = None
    agent_state: dict[str, Any] | None = None
    rewind_before_invocation_id: str | None = None
    compaction: EventCompaction | None = None


def new_event_id() -> str:
    """A fresh event id (uuid4, as ADK writes it)."""
    return str(uuid.uuid4())


def new_invocation_id(prefix: str = "e-") -> str:
    """A fresh invocation id: `e-` for runs, `p-` for state patches, as in ADK."""
    return f"{prefix}{uuid.uuid4()}"


class ModelOutput(BaseModel):
    """What a model answer carries; ADK's Event extends its LlmResponse by these fields.

    `app.models.LlmResponse` and `Event` both start with them (in this order, which is also the
    order of their JSON keys), so a response becomes an event field for field.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    content: types.Content | None = None
    grounding_metadata: types.GroundingMetadata | None = None
    partial: bool | None = None
    turn_complete: bool | None = None
    finish_reason: types.FinishReason | None = None
    error_code: str | None = None
    error_message: str | None = None
    interrupted: bool | None = None
    custom_metadata: dict[str, Any] | None = None
    usage_metadata: types.GenerateContentResponseUsageMetadata | None = None


class Event(WireModel, ModelOutput):
    """One entry of a session's history."""

    citation_metadata: types.CitationMetadata | None = None
    avg_logprobs: float | None = None
    model_version: str | None = None
    invocation_id: str = ""
    author: str
    actions: EventActions = Field(default_factory=EventActions)
    node_info: NodeInfo | None = Field(default_factory=NodeInfo)
    long_running_tool_ids: list[str] | None = None
    branch: str | None = None
    id: str = Field(default_factory=new_event_id)
    timestamp: float = Field(default_factory=time.time)
    seq: int | None = Field(default=None, ge=1)

    def get_function_calls(self) -> list[types.FunctionCall]:
        """The function calls this event's content asks for."""
        parts = self.content.parts if self.content and self.content.parts else []
        return [p.function_call for p in parts if p.function_call is not None]

    def get_function_responses(self) -> list[types.FunctionResponse]:
        """The function responses this event's content carries."""
        parts = self.content.parts if self.content and self.content.parts else []
        return [p.function_response for p in parts if p.function_response is not None]

    def is_final_response(self) -> bool:
        """Whether this event is an agent's final answer of the turn (ADK's rule).

        A user-authored event never is: ADK's runner does not yield the user's own message, ours
        does (as the first event), and loops that print final responses must not echo it.
        """
        if self.author == "user":
            return False
        if self.actions.skip_summarization or self.long_running_tool_ids:
            return True
        return (
            not self.get_function_calls()
            and not self.get_function_responses()
            and not self.partial
            and not self.has_trailing_code_execution_result()
        )

    def has_trailing_code_execution_result(self) -> bool:
        """Whether the content ends with a code execution's result (the model answers next)."""
        parts = self.content.parts if self.content is not None else None
        return parts is not None and len(parts) > 0 and parts[-1].code_execution_result is not None

    @classmethod
    def from_stored(cls, seq: int, data: dict[str, Any]) -> "Event":
        """Rebuild an event from its stored wire JSON and its seq."""
        event = cls.model_validate(data)
        event.seq = seq
        return event


class Session(WireModel):
    """One conversation: merged state plus (some of) its events in seq order."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    last_update_time: float = 0.0
    #: The seq of the newest persisted event; the optimistic-concurrency token. Not in ADK's JSON
    #: (served as the ETag header instead).
    last_seq: int = Field(default=0, exclude=True)
