"""Cancelling an invocation that waits for the client, in the store (issue 28), over every
database backend (`db_engine`).

`request_cancel` flags a live invocation for its owner to stop; one in `requires_action` has no
owner, so it ends `cancelled` in the same unit that answers its open calls. A cancel that came
while the run was ending (too late for it to read) still wins when the run then records that it
waits (`finish`).
"""

from typing import Any

import pytest
from google.genai import types

from app.errors import InvocationNotFound
from app.invocations.models import Invocation, InvocationStatus, RequiredAction
from app.sessions.client_calls import PendingCall
from app.sessions.models import Event
from tests.invocations.store_helpers import (
    APP,
    S1,
    S2,
    Backend,
    create_invocation,
    fence,
)


async def _asks(backend: Backend) -> int:
    """inv-a runs, its model asks for a confirmation (call-1, answered by `ask-1`) and it ends
    waiting for it: its session's key."""
    running = await create_invocation(backend.store, "inv-a", acquire=True)
    session = await backend.sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    call = types.FunctionCall(id="ask-1", name="adk_request_confirmation", args={})
    await backend.sessions.append_event(
        session,
        Event(
            author="agent",
            invocation_id="inv-a",
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            long_running_tool_ids={"ask-1"},
        ),
    )
    return running.session_pk


def _waits_for_ask_1() -> dict[str, Any]:
    """The stored `requiredAction` of a run that waits for `ask-1`."""
    ask = PendingCall(
        call_id="ask-1",
        kind="confirmation",
        agent="agent",
        response_name="adk_request_confirmation",
        original_call_id="call-1",
        tool="refund",
        args={},
    )
    action = RequiredAction.stored([ask])
    assert action is not None
    return action


async def _ends_waiting(backend: Backend, session_pk: int) -> Invocation | None:
    """inv-a's run records that it ends waiting for `ask-1` (`finish`): what is stored then."""
    return await backend.store.finish(
        fence("inv-a"),
        session_pk,
        InvocationStatus.REQUIRES_ACTION,
        required_action=_waits_for_ask_1(),
    )


async def _answers(backend: Backend) -> list[tuple[str, str]]:
    """(call id, error type) of every function response in session s1."""
    session = await backend.sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    return [
        (str(r.id), str((r.response or {})["error"]["type"]))
        for event in session.events
        for r in event.get_function_responses()
    ]


async def test_cancel_of_a_waiting_invocation_ends_it_and_answers_its_calls(
    backend: Backend,
) -> None:
    session_pk = await _asks(backend)
    await _ends_waiting(backend, session_pk)

    cancelled = await backend.store.request_cancel(S1, "inv-a")

    assert cancelled.status is InvocationStatus.CANCELLED
    assert cancelled.required_action is None
    assert cancelled.error is not None
    assert cancelled.error["type"] == "invocation-cancelled"
    assert await _answers(backend) == [("ask-1", "invocation-cancelled")]
    assert await backend.store.waiting(S1) == []
    # Once more: nothing changes, nothing is answered twice.
    assert await backend.store.request_cancel(S1, "inv-a") == cancelled
    assert await _answers(backend) == [("ask-1", "invocation-cancelled")]


async def test_cancel_of_a_waiting_invocation_from_another_session_is_not_found(
    backend: Backend,
) -> None:
    session_pk = await _asks(backend)
    await _ends_waiting(backend, session_pk)

    with pytest.raises(InvocationNotFound):
        await backend.store.request_cancel(S2, "inv-a")

    still = (await backend.store.get(S1, "inv-a")).invocation
    assert still.status is InvocationStatus.REQUIRES_ACTION
    assert await _answers(backend) == []


async def test_a_cancel_requested_as_the_run_ends_waiting_cancels_it(backend: Backend) -> None:
    session_pk = await _asks(backend)
    flagged = await backend.store.request_cancel(S1, "inv-a")
    assert (flagged.status, flagged.cancel_requested) == (InvocationStatus.RUNNING, True)

    final = await _ends_waiting(backend, session_pk)

    assert final is not None
    assert final.status is InvocationStatus.CANCELLED
    assert final.required_action is None
    assert await _answers(backend) == [("ask-1", "invocation-cancelled")]
    assert (await backend.store.get(S1, "inv-a")).invocation == final
    # The session's lease was released with it: the next run starts at once.
    assert (await create_invocation(backend.store, "inv-b", acquire=True)).acquired
