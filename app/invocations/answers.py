"""What a `requires_action` invocation waits for, and the client's answers turned into the
message that continues it.

The manager decides when (a run ended listing calls for the client; `/resume`; the queue
worker's expiry); this module decides what: the stored `requiredAction`, the checks an answer must
pass (a call never made is 404, one no longer waited for 409, a duplicate 422), the function
responses that carry the answers (ADK's `adk_request_confirmation` answers for confirmations,
the tool's own name for results), the answers a timeout gives, and which invocation an answer
sent ADK's way (no `invocationId`) belongs to (`owner_to_continue`).

Answers come two ways: `/resume` (`answer_message` builds the function responses) and ADK's, a
`/run` message carrying them. Both end in the same message, and `check_answers` checks it for
either, before anything is queued or stored: each response carries the name its call expects, a
confirmation is a JSON boolean, and the user event fits the event size limit. `answer_ids`, which
every message goes through, refuses malformed confirmations even where the waiting calls are not
known yet (`/run` with `invocationId`).
"""

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from google.genai import types
from pydantic import ValidationError

from app.errors import (
    ActionExpired,
    FunctionCallAnswered,
    FunctionCallNotFound,
    InvalidAnswer,
    InvalidRequest,
    InvocationNotResumable,
)
from app.invocations.models import (
    AnswerInvocationRequest,
    ConfirmationAnswer,
    Invocation,
    InvocationStatus,
    RequiredCall,
    ResultAnswer,
    ResumeInvocationRequest,
    SessionRef,
)
from app.sessions.client_calls import (
    REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
    REQUEST_EUC_FUNCTION_CALL_NAME,
)
from app.sessions.models import Event, EventActions
from app.sessions.storage import StorageLimits, prepare_event
from app.sessions.tool_confirmation import ToolConfirmation

if TYPE_CHECKING:  # the store is the manager's; this module only reads through it
    from app.invocations.store import InvocationStore


def answer_ids(message: types.Content | None) -> frozenset[str]:
    """The ids of the function responses a new message carries (answers to waiting calls).

    InvalidAnswer if one named `adk_request_confirmation` is not a confirmation (see
    `check_answers`): whatever the message turns out to answer, it never counts as a denial.
    """
    if message is None:
        return frozenset()
    for index, part in enumerate(message.parts or []):
        response = part.function_response
        if response is not None and response.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME:
            _check_confirmation(index, response)
    return frozenset(
        part.function_response.id
        for part in message.parts or []
        if part.function_response is not None and part.function_response.id
    )


async def owner_to_continue(
    store: "InvocationStore", ref: SessionRef, answers: frozenset[str]
) -> Invocation | None:
    """The invocation an answer sent ADK's way (function responses with ids `answers` in a new
    message, no `invocationId`) belongs to, as ADK's Runner decides (`resume_invocation.json`:
    every event of a resumed flow carries the id of the invocation that made the call): the one
    waiting for those calls; else the one that made the latest of them, once it has ended:

    - completed: it goes on only if the call is a long-running tool's (the tool answered
      "pending"; the result comes now, once or again) or one it waited for (a confirmation sent
      again is stored and runs nothing: ADK's empty stream); the store decides, in the
      transaction that continues it;
    - failed or cancelled: resumed as `invocationId` would (its open calls were answered with
      its error; the client's answer now stands for that).

    None: no invocation of the session made the calls, or the one that did is still queued or
    running (the message then waits its turn as a new one)."""
    for waiting in await store.waiting(ref):
        action = waiting.required_action
        if action is not None and answers & {c.request_call_id for c in action.calls}:
            return waiting
    owner_id = await store.owner_of_calls(ref, answers)
    if owner_id is None:
        return None
    owner = (await store.get(ref, owner_id)).invocation
    return owner if owner.status in _ENDED else None


#: The statuses of an invocation that has ended (an answer may continue it).
_ENDED = frozenset(
    {InvocationStatus.COMPLETED, InvocationStatus.FAILED, InvocationStatus.CANCELLED}
)


def check_answers(
    invocation: Invocation, resumed: ResumeInvocationRequest, max_event_bytes: int
) -> None:
    """The check every answer to `invocation` passes, whichever way it came, before anything is
    queued or stored (`resumed` is the run that would continue it):

    - a function response to a waited-for call carries the name that call expects
      (`adk_request_confirmation`, `adk_request_credential`, or the tool's for a result), and a
      confirmation is ADK's ToolConfirmation with a JSON boolean `confirmed`: else InvalidAnswer
      (a response under another name would be stored, and then apply as nothing);
    - the user event `resumed` stores fits `max_event_bytes` (the session services' limit):
      else EventTooLarge, rather than an accepted answer whose run then fails on it.
    """
    message = resumed.new_message
    calls = invocation.required_action.calls if invocation.required_action else []
    waiting = {call.request_call_id: call for call in calls}
    for index, part in enumerate(message.parts or [] if message is not None else []):
        response = part.function_response
        call = waiting.get(response.id or "") if response is not None else None
        if response is None or call is None:
            continue
        expected = _answer_name(call)
        if response.name != expected:
            # On `/resume` this is an answer of the wrong kind (a result for a confirmation).
            reason = (
                f"Call {call.function_call_id!r} waits for a {call.kind}, answered by a function "
                f"response named {expected!r} to {call.request_call_id!r}; this answer is "
                f"named {response.name!r}."
            )
            error = {"functionCallId": call.function_call_id, "kind": call.kind}
            raise InvalidAnswer(
                reason, errors=[{"type": "invalid_answer", "loc": [], "msg": reason, **error}]
            )
        if call.kind == "confirmation":
            _check_confirmation(index, response)
    user_event = Event(
        author="user",
        invocation_id=invocation.id,
        content=message,
        actions=EventActions(state_delta=dict(resumed.state_delta or {})),
        custom_metadata=dict(resumed.custom_metadata) if resumed.custom_metadata else None,
    )
    prepare_event(user_event, StorageLimits(max_event_bytes=max_event_bytes))


async def answer_message(
    invocation: Invocation,
    request: AnswerInvocationRequest,
    session_events: Callable[[], Awaitable[Sequence[Event]]],
) -> types.Content:
    """The user message that answers `invocation` as `request` says, or the error why not
    (an answer of the wrong kind is left to `check_answers`, which every answer passes).

    `session_events` is read only for an answer to a call that is not waited for, to tell a
    call the invocation never made (FunctionCallNotFound) from one answered already
    (FunctionCallAnswered).
    """
    action = invocation.required_action
    if invocation.status is not InvocationStatus.REQUIRES_ACTION or action is None:
        raise InvocationNotResumable(
            f"Invocation {invocation.id!r} is {invocation.status}: it waits for no answer.",
            invocationStatus=invocation.status,
        )
    waiting = {call.function_call_id: call for call in action.calls}
    answered: set[str] = set()

    async def waited_for(call_id: str) -> RequiredCall:
        call = waiting.get(call_id)
        if call is None:
            raise _unknown_or_answered(invocation.id, call_id, await session_events())
        if call_id in answered:
            raise InvalidRequest(f"Call {call_id!r} is answered twice in this request.")
        answered.add(call_id)
        return call

    parts: list[types.Part] = []
    for confirmation in request.confirmations or []:
        call = await waited_for(confirmation.function_call_id)
        response: dict[str, Any] = {"confirmed": confirmation.confirmed}
        if confirmation.payload is not None:
            response["payload"] = confirmation.payload
        parts.append(
            _function_response(
                call.request_call_id, REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, response
            )
        )
    for result in request.results or []:
        call = await waited_for(result.function_call_id)
        parts.append(_function_response(call.request_call_id, call.tool, result.response))
    if not parts:
        raise InvalidRequest("Give at least one confirmation or result.")
    return types.Content(role="user", parts=parts)


def expiry_answers(invocation: Invocation, detail: str) -> AnswerInvocationRequest | None:
    """The answers a timed-out invocation continues with: every confirmation denied, every
    result an `action-expired` error; None when a credential waits (nothing can stand in)."""
    calls = invocation.required_action.calls if invocation.required_action else []
    if any(c.kind == "credential" for c in calls):
        return None
    error = {"error": {"type": ActionExpired.problem_type, "detail": detail}}
    return AnswerInvocationRequest(
        confirmations=[
            ConfirmationAnswer(function_call_id=c.function_call_id, confirmed=False)
            for c in calls
            if c.kind == "confirmation"
        ],
        results=[
            ResultAnswer(function_call_id=c.function_call_id, response=error)
            for c in calls
            if c.kind == "result"
        ],
    )


def _unknown_or_answered(invocation_id: str, call_id: str, events: Sequence[Event]) -> Exception:
    made = {
        call.id
        for event in events
        if event.invocation_id == invocation_id
        for call in event.get_function_calls()
    }
    if call_id in made:
        return FunctionCallAnswered(
            f"Invocation {invocation_id!r} no longer waits for call {call_id!r}.",
            functionCallId=call_id,
        )
    return FunctionCallNotFound(
        f"Invocation {invocation_id!r} made no call {call_id!r}.", functionCallId=call_id
    )


def _answer_name(call: RequiredCall) -> str:
    """The name the function response answering `call` carries."""
    if call.kind == "confirmation":
        return REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
    if call.kind == "credential":
        return REQUEST_EUC_FUNCTION_CALL_NAME
    return call.tool


def _check_confirmation(index: int, response: types.FunctionResponse) -> None:
    """InvalidAnswer, naming the field, unless `response` (part `index` of the message) is a
    confirmation: ADK's ToolConfirmation JSON (or its wrapper) with a JSON boolean `confirmed`."""
    loc: list[str | int] = ["newMessage", "parts", index, "functionResponse", "response"]
    try:
        ToolConfirmation.from_answer(response.response)
    except ValidationError as exc:
        errors = [
            {"type": "invalid_answer", "loc": [*loc, *e["loc"]], "msg": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
    except ValueError as exc:
        errors = [{"type": "invalid_answer", "loc": loc, "msg": str(exc)}]
    else:
        return
    raise InvalidAnswer(
        "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors), errors=errors
    )


def _function_response(call_id: str, name: str, response: dict[str, Any]) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response=response)
    )
