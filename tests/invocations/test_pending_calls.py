"""A run tells what its invocation waits for from its own events and the stored `requiredAction`
it resumed, as the whole history would (`PendingCalls` against `pending_client_calls`)."""

from typing import Any

import pytest
from google.genai import types

from app.invocations.models import RequiredAction
from app.sessions.client_calls import (
    REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
    PendingCalls,
    pending_client_calls,
)
from app.sessions.models import Event

INVOCATION = "e-1"


def _event(author: str, *parts: types.Part, listed: list[str] | None = None) -> Event:
    content = types.Content(role="user" if author == "user" else "model", parts=list(parts))
    return Event(
        author=author,
        invocation_id=INVOCATION,
        content=content if parts else None,
        long_running_tool_ids=listed,
    )


def _call(call_id: str, name: str, args: dict[str, Any] | None = None) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args or {}))


def _answer(call_id: str, name: str, response: dict[str, Any]) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response=response)
    )


def _confirmation(request_id: str, original: str) -> types.Part:
    args = {
        "originalFunctionCall": {"id": original, "name": "transfer", "args": {"amount": 5}},
        "toolConfirmation": {"hint": "sure?", "confirmed": False},
    }
    return _call(request_id, REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, args)


#: Two long-running calls; the client answers one, the model speaks: the other still waits.
LONG_RUNNING = [
    _event("user", types.Part(text="go")),
    _event(
        "agent", _call("l1", "job", {"n": 1}), _call("l2", "job", {"n": 2}), listed=["l1", "l2"]
    ),
    _event("agent", listed=["l1", "l2"]),
    _event("user", _answer("l1", "job", {"done": 1})),
    _event("agent", types.Part(text="one done")),
]
#: Two confirmations; one answered, the other re-listed; then both answered, and the confirmed
#: long-running call listed by its own id, without content.
CONFIRMATIONS = [
    _event("user", types.Part(text="pay")),
    _event("agent", _call("t1", "transfer", {"amount": 5}), _call("t2", "transfer")),
    _event("agent", _confirmation("c1", "t1"), _confirmation("c2", "t2"), listed=["c1", "c2"]),
    _event("user", _answer("c1", REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, {"confirmed": True})),
    _event("agent", _confirmation("c2", "t2"), listed=["c2"]),
    _event("user", _answer("c2", REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, {"confirmed": True})),
    _event("agent", _answer("t2", "transfer", {"ok": True})),
    _event("agent", listed=["t1"]),
]


@pytest.mark.parametrize("history", [LONG_RUNNING, CONFIRMATIONS], ids=["results", "confirm"])
def test_a_run_from_the_stored_action_sees_what_the_whole_history_says(
    history: list[Event],
) -> None:
    incomplete = []
    for split in range(len(history) + 1):
        before, run = history[:split], history[split:]
        stored = RequiredAction.stored(pending_client_calls(before, INVOCATION))
        if split and (stored is None or before[-1].author == "user"):
            continue  # a run starts where the invocation began or ended waiting for the client
        earlier = RequiredAction.model_validate(stored).calls if stored else []
        pending = PendingCalls(INVOCATION, [call.pending() for call in earlier])
        for event in run:
            pending.see(event)
        if pending.incomplete():  # the run reads the invocation's events instead
            incomplete.append(split)
            continue
        expected = RequiredAction.stored(pending_client_calls(history, INVOCATION))
        assert RequiredAction.stored(pending.calls()) == expected, f"split at {split}"
    # Only where the confirmed call waiting for its result was confirmed in an earlier run.
    assert incomplete == ([5] if history is CONFIRMATIONS else [])
