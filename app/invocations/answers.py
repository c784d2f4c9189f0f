"""What a `requires_action` invocation waits for, and the client's answers turned into the
message that continues it.

The manager decides when (a run ended listing calls for the client; `/resume`; the reaper's
timeout); this module decides what: the stored `requiredAction`, the checks an answer must
pass (a call never made is 404, one no longer waited for 409, a wrong kind or a duplicate
422), the function responses that carry the answers (ADK's `adk_request_confirmation`
answers for confirmations, the tool's own name for results), and the answers a timeout gives.
"""

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from google.genai import types

from app.agents.pending import CONFIRMATION_CALL, pending_client_calls
from app.errors import (
    ActionExpired,
    FunctionCallAnswered,
    FunctionCallNotFound,
    InvalidRequest,
    InvocationNotResumable,
)
from app.invocations.models import (
    AnswerInvocationRequest,
    ConfirmationAnswer,
    Invocation,
    InvocationStatus,
    RequiredAction,
    RequiredCall,
    ResultAnswer,
)
from app.sessions.models import Event


def answer_ids(message: types.Content | None) -> frozenset[str]:
    """The ids of the function responses a new message carries (answers to waiting calls)."""
    if message is None:
        return frozenset()
    return frozenset(
        part.function_response.id
        for part in message.parts or []
        if part.function_response is not None and part.function_response.id
    )


def required_action(events: Sequence[Event], invocation_id: str) -> dict[str, Any] | None:
    """What the invocation waits for (its unanswered client calls), as stored JSON."""
    calls = [
        RequiredCall(
            function_call_id=p.original_call_id or p.call_id,
            tool=p.tool or p.response_name,
            args=p.args,
            hint=p.hint,
            payload=p.payload,
            kind=p.kind,
            request_call_id=p.call_id,
        )
        for p in pending_client_calls(events, invocation_id)
    ]
    if not calls:
        return None
    return RequiredAction(calls=calls).model_dump(mode="json", by_alias=True)


async def answer_message(
    invocation: Invocation,
    request: AnswerInvocationRequest,
    session_events: Callable[[], Awaitable[Sequence[Event]]],
) -> types.Content:
    """The user message that answers `invocation` as `request` says, or the error why not.

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

    async def waited_for(call_id: str, kind: str) -> RequiredCall:
        call = waiting.get(call_id)
        if call is None:
            raise _unknown_or_answered(invocation.id, call_id, await session_events())
        if call.kind != kind:
            raise InvalidRequest(
                f"Call {call_id!r} waits for a {call.kind}, not a {kind}.",
                errors=[{"functionCallId": call_id, "kind": call.kind}],
            )
        if call_id in answered:
            raise InvalidRequest(f"Call {call_id!r} is answered twice in this request.")
        answered.add(call_id)
        return call

    parts: list[types.Part] = []
    for confirmation in request.confirmations or []:
        call = await waited_for(confirmation.function_call_id, "confirmation")
        response: dict[str, Any] = {"confirmed": confirmation.confirmed}
        if confirmation.payload is not None:
            response["payload"] = confirmation.payload
        parts.append(_function_response(call.request_call_id, CONFIRMATION_CALL, response))
    for result in request.results or []:
        call = await waited_for(result.function_call_id, "result")
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


def _function_response(call_id: str, name: str, response: dict[str, Any]) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response=response)
    )
