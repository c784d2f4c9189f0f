"""Wire models of runs (ADK's RunAgentRequest, our invocation request and resource) and the
session address every invocation operation takes."""

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import Field, StrictBool, model_validator

from app.sessions.client_calls import (
    REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
    REQUEST_EUC_FUNCTION_CALL_NAME,
    PendingCall,
)
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
    #: Ended its current step waiting for the client (confirmations, results, credentials):
    #: nothing runs and the session is free until an answer resumes it (`requiredAction`).
    REQUIRES_ACTION = "requires_action"

    @property
    def terminal(self) -> bool:
        """Whether the invocation has stopped running (for now, if it requires action)."""
        return self in (self.COMPLETED, self.FAILED, self.CANCELLED, self.REQUIRES_ACTION)

    @property
    def resumable(self) -> bool:
        """Whether a run may continue the invocation under its id (a paused status joins these).

        `app.db.repositories.invocations` filters on the same statuses (`_RESUMABLE`).
        """
        return self in (self.FAILED, self.CANCELLED)


class RunAgentRequest(WireModel):
    """ADK's `/run` and `/run_sse` body.

    With `invocationId`, the run continues that invocation of the session (it must have failed
    or been cancelled); `newMessage` is then optional. `customMetadata` is kept on the user event.
    """

    app_name: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    session_id: str = Field(max_length=128)
    new_message: ClientContent | None = None
    streaming: bool = False
    state_delta: dict[str, Any] | None = None
    invocation_id: str | None = Field(default=None, max_length=128)
    custom_metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _message_or_invocation(self) -> Self:
        if self.new_message is None:
            if self.invocation_id is None:
                raise ValueError("newMessage is required unless invocationId names an invocation")
            if self.state_delta or self.custom_metadata:
                # Both are stored on the user event, and a run without newMessage stores none.
                raise ValueError("stateDelta and customMetadata need a newMessage to go with")
        return self


class RunConfigRequest(WireModel):
    """The run options a client may set (capped by the server's limits)."""

    max_llm_calls: int | None = Field(default=None, ge=1)
    streaming_mode: Literal["none", "sse"] | None = None
    #: A token budget for each model request's contents: the oldest whole turns are left out
    #: beyond it (the latest user turn never is).
    max_context_tokens: int | None = Field(default=None, ge=1)


class RunOptions(WireModel):
    """How a run goes, beyond its message: what new and resumed invocations share."""

    state_delta: dict[str, Any] | None = None
    #: Kept on the user event (`customMetadata`) and given to the agents as
    #: `run_config.custom_metadata`.
    custom_metadata: dict[str, Any] | None = None
    run_config: RunConfigRequest | None = None
    mode: Literal["wait", "stream", "background"] = "wait"
    #: With another invocation running: `reject` (409 session-busy) or `enqueue` (wait for it).
    #: With one waiting for the client (`requires_action`): `reject` (409
    #: session-requires-action); `enqueue` and `interrupt` cancel it first (its open calls get
    #: the cancellation as their result), unless the message answers its calls, which resumes it.
    multitask_strategy: Literal["reject", "enqueue", "interrupt"] = "reject"
    on_disconnect: Literal["continue", "cancel"] = "continue"


class CreateInvocationRequest(RunOptions):
    """`POST .../invocations`."""

    new_message: ClientContent


class ResumeInvocationRequest(RunOptions):
    """Continue a failed or cancelled invocation under its own id, from the session's history.

    `newMessage`, if given, is stored as a user event of that invocation before the agent goes on.
    """

    new_message: ClientContent | None = None


class RequiredCall(WireModel):
    """One call the client must answer before the invocation goes on.

    `functionCallId`, `tool` and `args` are the original tool call's; `kind` says how to answer:
    `confirmation` (in `confirmations`, or ADK's `adk_request_confirmation` function response),
    `result` (a long-running tool's result, in `results`), `credential` (ADK's
    `adk_request_credential` function response, sent to `/run` with `invocationId`).
    """

    function_call_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    hint: str | None = None
    payload: Any = None
    kind: Literal["confirmation", "result", "credential"]
    #: The id of the call the client's function response answers in ADK's way (the
    #: `adk_request_*` call for confirmations and credentials; the call itself for results).
    request_call_id: str

    @classmethod
    def of(cls, call: PendingCall) -> Self:
        """The stored form of a pending call (`app.sessions.client_calls`)."""
        return cls(
            function_call_id=call.original_call_id or call.call_id,
            tool=call.tool or call.response_name,
            args=call.args,
            hint=call.hint,
            payload=call.payload,
            kind=call.kind,
            request_call_id=call.call_id,
        )

    def pending(self) -> PendingCall:
        """The pending call this stored one is: what a run that continues the invocation starts
        from (the agent that made it is not stored, nor a credential's config)."""
        response_name = {
            "confirmation": REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
            "credential": REQUEST_EUC_FUNCTION_CALL_NAME,
        }.get(self.kind, self.tool)
        return PendingCall(
            call_id=self.request_call_id,
            kind=self.kind,
            agent="",
            response_name=response_name,
            original_call_id=self.function_call_id,
            tool=self.tool,
            args=dict(self.args),
            hint=self.hint,
            payload=self.payload,
        )


class RequiredAction(WireModel):
    """What a `requires_action` invocation waits for."""

    calls: list[RequiredCall]

    def request_call_ids(self) -> set[str]:
        """The ids the client's function responses answer (`RequiredCall.request_call_id`)."""
        return {call.request_call_id for call in self.calls}

    @classmethod
    def stored(cls, calls: Sequence[PendingCall]) -> dict[str, Any] | None:
        """What `calls` are as a stored `requiredAction` (None: the invocation waits for
        nothing)."""
        if not calls:
            return None
        return cls(calls=[RequiredCall.of(c) for c in calls]).model_dump(mode="json", by_alias=True)


class ConfirmationAnswer(WireModel):
    """A person's decision on one call that needs confirmation."""

    function_call_id: str = Field(max_length=256)
    #: A JSON boolean: `"yes"`, `1`, `"true"` or null are refused (422), never taken as a yes.
    confirmed: StrictBool
    payload: Any = None


class ResultAnswer(WireModel):
    """The late result of a long-running tool call."""

    function_call_id: str = Field(max_length=256)
    response: dict[str, Any]


class AnswerInvocationRequest(WireModel):
    """`POST .../invocations/{iid}/resume`: answers to some or all of `requiredAction`."""

    confirmations: list[ConfirmationAnswer] | None = Field(default=None, max_length=1000)
    results: list[ResultAnswer] | None = Field(default=None, max_length=1000)
    mode: Literal["wait", "stream", "background"] = "background"


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
    #: While `requires_action`: `{"calls": [{functionCallId, tool, args, hint, payload, kind}]}`.
    required_action: RequiredAction | None = None
    cancel_requested: bool = False
    #: How many processes started running it (a takeover after its owner died adds one).
    attempt: int = 0
    #: The process running it (or that last ran it); empty while queued for any worker.
    owner: str | None = None
    #: When its owner last renewed it (a stale one is taken over after AGENTD_LEASE_SECONDS).
    heartbeat_time: float | None = None


class InvocationResult(WireModel):
    """A finished invocation and the events it persisted (mode `wait`)."""

    invocation: Invocation
    events: list[Event]


class InvocationPage(WireModel):
    """One page of a session's invocations, newest first."""

    invocations: list[Invocation]
    next_page_token: str | None = None
