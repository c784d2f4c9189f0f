"""What an invocation waits for: the client calls it left open.

An invocation that needs the client ends with an event whose `long_running_tool_ids` name the
calls the client answers: `adk_request_confirmation` calls (a tool waits for a person's
approval), `adk_request_credential` calls (a tool waits for a credential) and the calls of
long-running tools whose result the client sends later. `pending_client_calls` lists those of one
invocation that no function response in the session answers yet, in the order the invocation's
events last listed them.

The rule, for every id a non-user event of the invocation lists in `long_running_tool_ids`: it is
pending unless a function response with that id comes after the LAST event listing it. (A call
can be listed again: the agent re-lists the unanswered confirmations of a step when only some
were answered, and lists a confirmed long-running call whose tool returned no result yet, whose
earlier "requires confirmation" answer then no longer counts.) Answering means sending a user
message with a function response carrying `call_id`: for a confirmation
`{"confirmed": bool, "payload"?: ...}` named `adk_request_confirmation`; for a result the tool's
response under the tool's name.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from google.genai import types

from app.agents.agent_tool_flow import passed_up
from app.agents.auth_flow import REQUEST_EUC_FUNCTION_CALL_NAME
from app.agents.confirmation_flow import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, original_call_of
from app.sessions.models import Event

PendingKind = Literal["confirmation", "credential", "result"]

#: The names the client's function responses carry when it answers a confirmation / credential.
CONFIRMATION_CALL = REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
CREDENTIAL_CALL = REQUEST_EUC_FUNCTION_CALL_NAME


@dataclass(frozen=True)
class PendingCall:
    """One call an invocation waits for the client to answer."""

    #: The id the client's function response must carry (for a confirmation or a credential,
    #: the `adk_request_*` call's id; for a result, the tool call's own id).
    call_id: str
    #: "confirmation" (adk_request_confirmation), "credential" (adk_request_credential) or
    #: "result" (a long-running tool's call).
    kind: PendingKind
    #: The agent that made the call (the one that resumes when it is answered).
    agent: str
    #: The name the client's function response must carry (`adk_request_confirmation`,
    #: `adk_request_credential`, or the tool's name).
    response_name: str
    #: The ORIGINAL tool call: its id, tool name and arguments (for a result, the call itself).
    original_call_id: str | None
    tool: str | None
    args: dict[str, Any]
    #: For a confirmation: the tool's hint and payload (None otherwise).
    hint: str | None = None
    payload: Any | None = None
    #: For a credential: the AuthConfig JSON the client fills in (None otherwise).
    auth_config: dict[str, Any] | None = None


def is_waiting_event(event: Event) -> bool:
    """Whether `event` is one an agent yields to end its invocation waiting for the client (its
    credential and confirmation requests, calls passed up from an AgentTool, or only the ids
    of long-running calls), as opposed to a model response that lists its long-running calls."""
    if not event.long_running_tool_ids:
        return False
    if event.content is None or passed_up(event):
        return True
    return any(
        call.name in (CONFIRMATION_CALL, CREDENTIAL_CALL) for call in event.get_function_calls()
    )


def pending_client_calls(events: Sequence[Event], invocation_id: str) -> list[PendingCall]:
    """The long-running calls of invocation `invocation_id` that `events` (the session's
    history, in order) leave unanswered; see the module's docstring for the rule."""
    calls: dict[str, tuple[str, types.FunctionCall]] = {}
    responses: dict[str, int] = {}
    listed: dict[str, tuple[int, int]] = {}
    for index, event in enumerate(events):
        for call in event.get_function_calls():
            if call.id and call.id not in calls:
                calls[call.id] = (event.author, call)
        for response in event.get_function_responses():
            if response.id:
                responses[response.id] = index  # the last one
        if event.invocation_id == invocation_id and event.author != "user":
            for position, call_id in enumerate(event.long_running_tool_ids or ()):
                listed[call_id] = (index, position)
    pending: list[PendingCall] = []
    for call_id, (index, _) in sorted(listed.items(), key=lambda item: item[1]):
        if call_id not in calls or responses.get(call_id, -1) > index:
            continue
        author, call = calls[call_id]
        pending.append(_pending(call_id, author, call, calls))
    return pending


def _pending(
    call_id: str,
    author: str,
    call: types.FunctionCall,
    calls: dict[str, tuple[str, types.FunctionCall]],
) -> PendingCall:
    args: dict[str, Any] = dict(call.args or {})
    if call.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME:
        original = original_call_of(call)
        requested = args.get("toolConfirmation")
        requested = requested if isinstance(requested, dict) else {}
        original_args = original.get("args")
        return PendingCall(
            call_id=call_id,
            kind="confirmation",
            agent=author,
            response_name=call.name,
            original_call_id=_str_or_none(original.get("id")),
            tool=_str_or_none(original.get("name")),
            args=dict(original_args) if isinstance(original_args, dict) else {},
            hint=_str_or_none(requested.get("hint")),
            payload=requested.get("payload"),
        )
    if call.name == REQUEST_EUC_FUNCTION_CALL_NAME:
        original_id = args.get("functionCallId")
        found = calls.get(original_id) if isinstance(original_id, str) else None
        original_call = found[1] if found is not None else None
        auth_config = args.get("authConfig")
        return PendingCall(
            call_id=call_id,
            kind="credential",
            agent=author,
            response_name=call.name,
            original_call_id=original_id if isinstance(original_id, str) else None,
            tool=original_call.name if original_call is not None else None,
            args=dict(original_call.args or {}) if original_call is not None else {},
            auth_config=auth_config if isinstance(auth_config, dict) else None,
        )
    return PendingCall(
        call_id=call_id,
        kind="result",
        agent=author,
        response_name=call.name or "",
        original_call_id=call_id,
        tool=call.name,
        args=args,
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
