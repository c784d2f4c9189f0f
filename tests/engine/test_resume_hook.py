"""A user's own workflow agent resumes through the hook (issue 27, acceptance 3, engine part).

The test app `custom_flow_agent` (tests/apps) has a root of its own type, `LastToFirst`, that
runs its sub-agents from the last to the first and implements `_resume_after_async`; `NoHook`
runs the same order without it. An invocation that waited for a confirmation in `worker` (last
in the list, so first in the order) must go on with `closer` after the answer, through the hook;
a recovered run (its process died after worker's answer) too. Without the hook, the resume fails
with `resume-not-supported` naming the agent. The SIGKILL takeover over real processes is in
tests/api/test_durable_runs.py.
"""

from collections.abc import AsyncGenerator

import pytest
from google.genai import types

from app.errors import ResumeNotSupported
from app.invocations.runner import Runner
from app.sessions.models import Event
from tests.apps.custom_flow_agent.agent import LastToFirst, NoHook, build
from tests.engine.conftest import Services
from tests.engine.helpers import run_turn


def _confirm(call_id: str) -> types.Content:
    response = types.FunctionResponse(
        id=call_id, name="adk_request_confirmation", response={"confirmed": True}
    )
    return types.Content(role="user", parts=[types.Part(function_response=response)])


def _outline(events: list[Event]) -> list[str]:
    """`author: what` per event (text, call:<name> or response:<name>)."""
    lines = []
    for event in events:
        calls = [f"call:{c.name}" for c in event.get_function_calls()]
        responses = [f"response:{r.name}" for r in event.get_function_responses()]
        text = ["text"] if event.content and any(p.text for p in event.content.parts or []) else []
        lines.append(f"{event.author}: {' '.join(calls + responses + text) or '-'}")
    return lines


async def _asked(services: Services, runner: Runner) -> tuple[str, str]:
    """Run "pay" until it waits; the invocation id and the confirmation request's call id."""
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    asked = await run_turn(runner, "pay")
    outline = _outline(asked)
    assert outline[:2] == ["user: text", "flow_worker: call:pay"]
    # The request and the placeholder response, in ADK's order or ours: closer has not run.
    assert sorted(outline[2:]) == [
        "flow_worker: call:adk_request_confirmation",
        "flow_worker: response:pay",
    ]
    (request,) = [
        call
        for event in asked
        for call in event.get_function_calls()
        if call.name == "adk_request_confirmation"
    ]
    assert request.id is not None
    return asked[0].invocation_id, request.id


def _answer(runner: Runner, invocation_id: str, call_id: str) -> AsyncGenerator[Event, None]:
    return runner.run_invocation(
        user_id="u", session_id="s", new_message=_confirm(call_id), invocation_id=invocation_id
    )


async def test_a_confirmation_answer_goes_on_through_the_users_hook(services: Services) -> None:
    runner = services.runner(build(LastToFirst, "flow"))
    invocation_id, call_id = await _asked(services, runner)

    done = [event async for event in _answer(runner, invocation_id, call_id)]

    assert _outline(done) == [
        "user: response:adk_request_confirmation",
        "flow_worker: response:pay",
        "flow_worker: text",
        "flow_closer: text",  # the hook: what LastToFirst runs after worker
    ]
    assert {e.invocation_id for e in done} == {invocation_id}


async def test_a_recovered_run_goes_on_through_the_users_hook(services: Services) -> None:
    runner = services.runner(build(LastToFirst, "flow"))
    invocation_id, call_id = await _asked(services, runner)
    answering = _answer(runner, invocation_id, call_id)
    async for event in answering:  # the process "dies" once worker's answer is committed
        if _outline([event]) == ["flow_worker: text"]:
            break
    await answering.aclose()

    recovered = [
        event
        async for event in runner.run_invocation(
            user_id="u", session_id="s", invocation_id=invocation_id, recover=True
        )
    ]

    assert _outline(recovered) == ["flow_closer: text"]  # worker is done: not run again
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert _outline(session.events)[-4:] == [
        "user: response:adk_request_confirmation",
        "flow_worker: response:pay",
        "flow_worker: text",
        "flow_closer: text",
    ]


async def test_a_recovered_run_whose_agent_still_waits_runs_nothing_after_it(
    services: Services,
) -> None:
    """After `request_confirmation` the model speaks (as in ADK), so the invocation's last event
    is the model's text, not the waiting event; a recovery from there must keep waiting, not
    run what follows the agent."""
    runner = services.runner(build(LastToFirst, "flow"))
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    asked = await run_turn(runner, "book")
    assert _outline(asked)[-1] == "flow_worker: text"  # the model spoke; closer did not run

    recovered = [
        event
        async for event in runner.run_invocation(
            user_id="u", session_id="s", invocation_id=asked[0].invocation_id, recover=True
        )
    ]

    assert recovered == []


async def test_without_the_hook_the_resume_fails_naming_the_agent(services: Services) -> None:
    runner = services.runner(build(NoHook, "flow"))
    invocation_id, call_id = await _asked(services, runner)
    seen: list[Event] = []

    async def answer() -> None:
        async for event in _answer(runner, invocation_id, call_id):
            seen.append(event)

    with pytest.raises(ResumeNotSupported) as failure:
        await answer()

    assert "'flow' (NoHook)" in str(failure.value.detail)
    assert failure.value.status == 501
    assert _outline(seen)[:3] == [
        "user: response:adk_request_confirmation",
        "flow_worker: response:pay",
        "flow_worker: text",
    ]
    assert seen[-1].error_code == "resume-not-supported"  # recorded, not silently dropped
    assert "flow_closer: text" not in _outline(seen)
