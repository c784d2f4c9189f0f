"""The client calls: what the framework asks the client for, and the one rule for what is pending.

An invocation that needs the client ends with a *waiting event*, whose `long_running_tool_ids`
name the calls the client answers:

- `adk_request_confirmation` calls (`REQUEST_CONFIRMATION_FUNCTION_CALL_NAME`): a tool waits for
  a person's approval; `args = {"originalFunctionCall": <the tool's call>, "toolConfirmation":
  <hint, confirmed, payload>}`; answered by a function response of that name carrying
  `{"confirmed": bool, "payload"?: ...}` (`ToolConfirmation.from_answer` parses it);
- `adk_request_credential` calls (`REQUEST_EUC_FUNCTION_CALL_NAME`): a tool waits for a
  credential; `args = {"functionCallId": <the tool's call id>, "authConfig": <the config>}`;
  answered by the AuthConfig with `exchangedAuthCredential` filled in;
- long-running tools' calls, answered by the tool's response under the tool's name;
- calls an AgentTool's wrapped agent waits for, passed up with their own ids: the waiting event
  maps each to the AgentTool call under `custom_metadata[PASSED_UP_KEY]`, and the AgentTool's
  stored "waiting" response keeps the wrapped agent's history (`AGENT_TOOL_EVENTS_KEY`) and the
  inner ids (`AGENT_TOOL_WAITING_KEY`).

The rule (`PendingCalls`; `pending_client_calls` over a whole history), for every id a non-user
event of the invocation lists in `long_running_tool_ids`: it is pending unless a function
response with that id comes after the LAST event listing it. (A call can be listed again: the
agent re-lists the unanswered confirmations of a step when only some were answered, and lists a
confirmed long-running call whose tool returned no result yet, whose earlier "requires
confirmation" answer then no longer counts.)

This module sits below the contexts so that tools, the invocation store and the engine all
speak one vocabulary; the agents' round trips (`app/agents/*_flow.py`) build on it.
"""

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from google.genai import types

from app.auth.auth_credential import wire
from app.auth.auth_tool import AuthConfig, AuthToolArguments
from app.sessions.models import Event
from app.sessions.tool_confirmation import ToolConfirmation

#: The function call that asks the client to confirm a tool call (ADK's name).
REQUEST_CONFIRMATION_FUNCTION_CALL_NAME = "adk_request_confirmation"
#: The function call that asks the client for a credential (ADK's name).
REQUEST_EUC_FUNCTION_CALL_NAME = "adk_request_credential"
#: The custom_metadata key of a waiting event that lists inner calls: {inner id: AgentTool call id}.
PASSED_UP_KEY = "agentToolCalls"
#: Where a waiting AgentTool call's stored response keeps the wrapped agent's history (never shown
#: to a model: contents.py drops it).
AGENT_TOOL_EVENTS_KEY = "agentToolEvents"
#: The ids of the wrapped agent's calls the client must answer, in a waiting call's response.
AGENT_TOOL_WAITING_KEY = "agentToolWaiting"

PendingKind = Literal["confirmation", "credential", "result"]


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


def passed_up(event: Event) -> dict[str, str]:
    """The inner calls `event` lists for the client, each with the AgentTool call it belongs
    to ({} for any other event)."""
    mapping = (event.custom_metadata or {}).get(PASSED_UP_KEY)
    if not isinstance(mapping, dict):
        return {}
    return {k: v for k, v in mapping.items() if isinstance(k, str) and isinstance(v, str)}


def _holds(event: Event, name: str) -> bool:
    """Whether the event holds a function call named `name` or a response to one."""
    for part in event.content.parts or () if event.content else ():
        if part.function_call and part.function_call.name == name:
            return True
        if part.function_response and part.function_response.name == name:
            return True
    return False


def is_auth_event(event: Event) -> bool:
    """Whether the event holds an `adk_request_credential` call or its answer."""
    return _holds(event, REQUEST_EUC_FUNCTION_CALL_NAME)


def is_confirmation_event(event: Event) -> bool:
    """Whether the event holds an `adk_request_confirmation` call or its answer."""
    return _holds(event, REQUEST_CONFIRMATION_FUNCTION_CALL_NAME)


def is_client_request_event(event: Event) -> bool:
    """Whether the event asks the client for a credential or a confirmation, or answers that, or
    lists calls an AgentTool's wrapped agent made: framework traffic the model never sees."""
    return is_auth_event(event) or is_confirmation_event(event) or bool(passed_up(event))


def is_waiting_event(event: Event) -> bool:
    """Whether `event` is one an agent yields to end its invocation waiting for the client (its
    credential and confirmation requests, calls passed up from an AgentTool, or only the ids
    of long-running calls), as opposed to a model response that lists its long-running calls."""
    if not event.long_running_tool_ids:
        return False
    if event.content is None or passed_up(event):
        return True
    return any(
        call.name in (REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, REQUEST_EUC_FUNCTION_CALL_NAME)
        for call in event.get_function_calls()
    )


def waiting_calls(event: Event) -> list[types.FunctionCall]:
    """The function calls `event` lists in its `long_running_tool_ids`: what it waits for."""
    waiting = set(event.long_running_tool_ids or ())
    return [call for call in event.get_function_calls() if call.id in waiting]


def answered_ids(event: Event) -> set[str]:
    """The ids of the calls `event`'s function responses answer."""
    return {response.id for response in event.get_function_responses() if response.id}


def calling_event(
    events: Sequence[Event], answered: set[str], *, author: str | None = None
) -> Event | None:
    """The latest of `events` (by `author`, if given) that made one of the calls `answered`
    names: the one an answer resumes. Nothing answered (a plain message): None at once, since
    every turn asks and a scan would cost the whole history."""
    if not answered:
        return None
    for event in reversed(events):
        if author is not None and event.author != author:
            continue
        if any(call.id in answered for call in event.get_function_calls()):
            return event
    return None


def still_waiting(last: Event, later: Iterable[Event]) -> set[str]:
    """The calls `last` (an invocation's last event) lists that no event of `later` (the
    session's events after it, in order) answers: what a completed invocation still waits for.
    `later` is read only until every one is answered."""
    waiting = set(last.long_running_tool_ids or ())
    if waiting:
        for event in later:
            waiting -= answered_ids(event)
            if not waiting:
                break
    return waiting


def answerable_again(events: Iterable[Event]) -> set[str]:
    """The ids of the calls among `events` (one invocation's) that an answer may continue the
    invocation for after it completed, as ADK does: the long-running tool calls its model made
    (the tool answered "pending"; the result comes now, once or again), and its
    `adk_request_confirmation` calls (a confirmation sent again is stored and runs nothing).
    Not credential requests: a credential is used once, by the run it was asked for."""
    calls: set[str] = set()
    for event in events:
        listed = set(event.long_running_tool_ids or ())
        if not listed:
            continue
        waiting = is_waiting_event(event)
        for call in event.get_function_calls():
            if call.id in listed and (
                not waiting or call.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
            ):
                calls.add(call.id)
    return calls


def original_call_of(request: types.FunctionCall) -> dict[str, Any]:
    """The `originalFunctionCall` an `adk_request_confirmation` call carries ({} if none)."""
    original = (request.args or {}).get("originalFunctionCall")
    return original if isinstance(original, dict) else {}


def credential_request_parts(response_event: Event) -> list[types.Part]:
    """One `adk_request_credential` call (fresh `adk-` id) per config `response_event`
    requested."""
    requested: dict[str, Any] = response_event.actions.requested_auth_configs
    parts = []
    for function_call_id, auth_config in requested.items():
        args = AuthToolArguments(
            function_call_id=function_call_id, auth_config=AuthConfig.model_validate(auth_config)
        )
        call = types.FunctionCall(
            id=f"adk-{uuid.uuid4()}", name=REQUEST_EUC_FUNCTION_CALL_NAME, args=wire(args)
        )
        parts.append(types.Part(function_call=call))
    return parts


def confirmation_request_parts(
    calls: Sequence[types.FunctionCall], response_event: Event
) -> list[types.Part]:
    """One `adk_request_confirmation` call (fresh `adk-` id) per confirmation `response_event`
    requested for one of `calls`."""
    by_id = {call.id: call for call in calls if call.id}
    parts = []
    for call_id, requested in response_event.actions.requested_tool_confirmations.items():
        original = by_id.get(call_id)
        if original is None:
            continue
        args = {
            "originalFunctionCall": original.model_dump(
                mode="json", by_alias=True, exclude_none=True
            ),
            "toolConfirmation": ToolConfirmation.model_validate(requested).wire(),
        }
        call = types.FunctionCall(
            id=f"adk-{uuid.uuid4()}", name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, args=args
        )
        parts.append(types.Part(function_call=call))
    return parts


def passed_up_parts(response_event: Event | None) -> tuple[list[types.Part], dict[str, str]]:
    """The inner calls the AgentTool calls of `response_event` wait for, as function-call parts
    for the waiting event, and their {inner id: AgentTool call id}."""
    parts: list[types.Part] = []
    mapping: dict[str, str] = {}
    if response_event is None:
        return parts, mapping
    for response in response_event.get_function_responses():
        body: Any = response.response or {}
        waiting = body.get(AGENT_TOOL_WAITING_KEY) if isinstance(body, dict) else None
        history = body.get(AGENT_TOOL_EVENTS_KEY) if isinstance(body, dict) else None
        if not response.id or not isinstance(waiting, list) or not isinstance(history, list):
            continue
        calls = _calls_in(history)
        for inner_id in waiting:
            call = calls.get(inner_id) if isinstance(inner_id, str) else None
            if call is not None and inner_id not in mapping:
                parts.append(types.Part(function_call=call))
                mapping[inner_id] = response.id
                # A credential request names the inner call that asked: carry it along (not
                # listed) so the client sees which tool wants the credential.
                asked = (call.args or {}).get("functionCallId")
                if call.name == REQUEST_EUC_FUNCTION_CALL_NAME and asked in calls:
                    parts.append(types.Part(function_call=calls[asked]))
    return parts, mapping


def _calls_in(history: list[Any]) -> dict[str, types.FunctionCall]:
    calls: dict[str, types.FunctionCall] = {}
    for item in history:
        if isinstance(item, dict):
            for call in Event.model_validate(item).get_function_calls():
                if call.id:
                    calls.setdefault(call.id, call)
    return calls


def pending_client_calls(events: Sequence[Event], invocation_id: str) -> list[PendingCall]:
    """The long-running calls of invocation `invocation_id` that `events` (the session's
    history, in order) leave unanswered, in the order the invocation's events last listed them;
    see the module's docstring for the rule."""
    pending = PendingCalls(invocation_id)
    for event in events:
        pending.see(event)
    return pending.calls()


class PendingCalls:
    """The rule of this module applied one event at a time: what the invocation waits for after
    the events seen so far.

    A run feeds it the events it commits, starting from what the invocation waited for when the
    run began (`earlier`: the calls of its stored `requiredAction`, in their order), so the run's
    end knows what it waits for without reading the history again; `pending_client_calls` feeds
    it a whole history. An earlier call stays pending until an event answers it, whether or not
    the run lists it again (a resumed run may go on without re-listing the calls nobody
    answered yet)."""

    def __init__(self, invocation_id: str, earlier: Sequence[PendingCall] = ()) -> None:
        self._invocation_id = invocation_id
        #: Every call seen, by id, with its author: the first one wins, as in a history.
        self._calls: dict[str, tuple[str, types.FunctionCall]] = {}
        #: The ids listed, in the order of their last listing: True once answered after it.
        self._listed: dict[str, bool] = {}
        #: The earlier calls as stored, for those no event seen here makes again.
        self._earlier = {call.call_id: call for call in earlier}
        for call in earlier:
            self._listed[call.call_id] = False
            if call.original_call_id and call.tool:
                # A later event may list the original call's id (a confirmed long-running call
                # whose tool returned no result) or name it (a credential request): known here.
                original = types.FunctionCall(
                    id=call.original_call_id, name=call.tool, args=dict(call.args)
                )
                self._calls.setdefault(call.original_call_id, (call.agent, original))

    def see(self, event: Event) -> None:
        """Take the next event (in history order; partial events are not part of it)."""
        for call in event.get_function_calls():
            if call.id and call.id not in self._calls:
                self._calls[call.id] = (event.author, call)
        for response in event.get_function_responses():
            if response.id in self._listed:
                self._listed[response.id] = True
        # After the answers: an event answering and listing one id leaves it pending.
        if event.invocation_id == self._invocation_id and event.author != "user":
            for call_id in event.long_running_tool_ids or ():
                self._listed.pop(call_id, None)
                self._listed[call_id] = False

    def incomplete(self) -> bool:
        """Whether a call still pending is one no event seen made, nor `earlier` describes (a
        call made before the run, whose confirmation was answered in an earlier one, listed
        now that its tool gave no result; or the call a credential request names): only the
        history knows what it is."""
        for call_id, answered in self._listed.items():
            known = self._calls.get(call_id)
            if answered or (known is None and call_id in self._earlier):
                continue
            if known is None:
                return True
            asked = (known[1].args or {}).get("functionCallId")
            if known[1].name == REQUEST_EUC_FUNCTION_CALL_NAME and asked not in self._calls:
                return True
        return False

    def calls(self) -> list[PendingCall]:
        """The calls still unanswered, in the order they were last listed."""
        pending: list[PendingCall] = []
        for call_id, answered in self._listed.items():
            if answered:
                continue
            known = self._calls.get(call_id)
            if known is not None:
                pending.append(_pending(call_id, known[0], known[1], self._calls))
            elif call_id in self._earlier:
                pending.append(self._earlier[call_id])
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
