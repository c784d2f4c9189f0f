"""Issue 19: a recovered invocation goes on from its last committed event (Runner `recover`).

A process "dies" here by abandoning the run right after an event was committed (the generator
is closed at that point, so nothing after it is written); the run is then continued with
`recover=True`, as the process that takes the invocation over does. What already completed is
not redone: a committed model response is not asked again, a tool with a stored response does
not run again, a finished workflow member does not run again; a model response whose calls
have no stored response has those calls run again, with the same idempotency key.
"""

from collections.abc import Callable
from typing import Any

from app.agents import LlmAgent
from app.agents.sequential_agent import SequentialAgent
from app.runners import InMemoryRunner
from app.sessions.client_calls import is_waiting_event, pending_client_calls
from app.sessions.models import Event
from app.tools import FunctionTool, LongRunningFunctionTool
from app.tools.tool_context import ToolContext
from tests.engine.helpers import ScriptModel, calls_response, text_response, user_message


class Ledger:
    """A tool with a side effect, counted with the key it was given."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def book(self, amount: int, tool_context: ToolContext) -> dict[str, Any]:
        """Book `amount`."""
        self.keys.append(tool_context.idempotency_key)
        return {"booked": amount}


async def _die_after(
    runner: InMemoryRunner, text: str, last: Callable[[Event], bool]
) -> list[Event]:
    """Run a turn until `last(event)` holds for a committed event, then stop there for good."""
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    seen: list[Event] = []
    run = runner.run_invocation(user_id="u", session_id="s", new_message=user_message(text))
    async for event in run:
        seen.append(event)
        if not event.partial and last(event):
            break
    await run.aclose()
    return seen


async def _recover(runner: InMemoryRunner, invocation_id: str) -> list[Event]:
    return [
        e
        async for e in runner.run_invocation(
            user_id="u", session_id="s", invocation_id=invocation_id, recover=True
        )
    ]


async def _history(runner: InMemoryRunner) -> list[Event]:
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return session.events


def _final_text(events: list[Event]) -> str:
    assert events[-1].content is not None
    assert events[-1].content.parts
    return events[-1].content.parts[0].text or ""


def _booker(ledger: Ledger, model: ScriptModel) -> LlmAgent:
    return LlmAgent(name="clerk", model=model, tools=[ledger.book])


async def test_calls_without_a_stored_response_run_again_with_the_same_key() -> None:
    ledger = Ledger()
    model = ScriptModel(replies=[calls_response(("book", {"amount": 5})), text_response("ok")])
    runner = InMemoryRunner(_booker(ledger, model), app_name="app")
    seen = await _die_after(runner, "book 5", lambda e: bool(e.get_function_calls()))
    invocation_id = seen[0].invocation_id
    (call,) = seen[-1].get_function_calls()
    ledger.keys.clear()  # as if the booking in flight was lost with the process

    recovered = await _recover(runner, invocation_id)

    assert ledger.keys == [f"{invocation_id}:{call.id}"]
    assert [e.author for e in recovered] == ["clerk", "clerk"]
    assert recovered[0].get_function_responses()[0].id == call.id
    assert _final_text(recovered) == "ok"
    assert len(model.requests) == 2  # the committed model step was not asked again
    history = await _history(runner)
    assert [e.invocation_id for e in history] == [invocation_id] * 4
    assert sum(len(e.get_function_calls()) for e in history) == 1


async def test_a_tool_with_a_stored_response_does_not_run_again() -> None:
    ledger = Ledger()
    model = ScriptModel(replies=[calls_response(("book", {"amount": 5})), text_response("ok")])
    runner = InMemoryRunner(_booker(ledger, model), app_name="app")
    seen = await _die_after(runner, "book 5", lambda e: bool(e.get_function_responses()))

    recovered = await _recover(runner, seen[0].invocation_id)

    assert len(ledger.keys) == 1
    assert [e.author for e in recovered] == ["clerk"]
    assert _final_text(recovered) == "ok"
    assert len(model.requests) == 2


async def test_a_finished_workflow_member_is_not_run_again() -> None:
    first_model = ScriptModel(replies=[text_response("first done")])
    second_model = ScriptModel(replies=[text_response("second done")])
    pipeline = SequentialAgent(
        name="pipeline",
        sub_agents=[
            LlmAgent(name="first", model=first_model),
            LlmAgent(name="second", model=second_model),
        ],
    )
    runner = InMemoryRunner(pipeline, app_name="app")
    seen = await _die_after(runner, "go", lambda e: e.author == "first")

    recovered = await _recover(runner, seen[0].invocation_id)

    assert [e.author for e in recovered] == ["second"]
    assert (len(first_model.requests), len(second_model.requests)) == (1, 1)


async def test_a_transfer_goes_on_with_its_target() -> None:
    helper_model = ScriptModel(replies=[text_response("helped")])
    root_model = ScriptModel(
        replies=[calls_response(("transfer_to_agent", {"agent_name": "helper"}))]
    )
    root = LlmAgent(
        name="root",
        model=root_model,
        sub_agents=[LlmAgent(name="helper", description="Helps.", model=helper_model)],
    )
    runner = InMemoryRunner(root, app_name="app")
    seen = await _die_after(runner, "help", lambda e: bool(e.get_function_responses()))

    recovered = await _recover(runner, seen[0].invocation_id)

    assert [e.author for e in recovered] == ["helper"]
    assert len(root_model.requests) == 1


async def test_a_long_running_call_runs_again_and_the_run_then_waits_for_its_result() -> None:
    """Whether the dead process had started the job is unknown: at least once, it starts again
    (same idempotency key), and the invocation waits for the client's result."""
    keys: list[str] = []

    def start_job(name: str, tool_context: ToolContext) -> None:
        """Start job `name`; its result comes later."""
        keys.append(f"{name} {tool_context.idempotency_key}")

    model = ScriptModel(replies=[calls_response(("start_job", {"name": "j"}))])
    agent = LlmAgent(name="jobs", model=model, tools=[LongRunningFunctionTool(start_job)])
    runner = InMemoryRunner(agent, app_name="app")
    seen = await _die_after(runner, "start", lambda e: bool(e.long_running_tool_ids))
    invocation_id = seen[0].invocation_id
    (call,) = seen[-1].get_function_calls()

    assert await _recover(runner, invocation_id) == []
    assert keys == [f"j {invocation_id}:{call.id}"]
    assert len(model.requests) == 1
    (pending,) = pending_client_calls(await _history(runner), invocation_id)
    assert (pending.kind, pending.call_id) == ("result", call.id)


async def test_a_run_that_asked_for_a_confirmation_stays_waiting() -> None:
    ledger = Ledger()
    model = ScriptModel(replies=[calls_response(("book", {"amount": 5})), text_response("ok")])
    agent = LlmAgent(
        name="clerk", model=model, tools=[FunctionTool(ledger.book, require_confirmation=True)]
    )
    runner = InMemoryRunner(agent, app_name="app")
    seen = await _die_after(runner, "book 5", lambda e: is_waiting_event(e))

    assert await _recover(runner, seen[0].invocation_id) == []
    assert ledger.keys == []
    assert len(model.requests) == 1


async def test_a_run_that_only_stored_its_message_starts_from_it() -> None:
    model = ScriptModel(replies=[text_response("hello")])
    runner = InMemoryRunner(LlmAgent(name="greeter", model=model), app_name="app")
    seen = await _die_after(runner, "hi", lambda e: e.author == "user")

    recovered = await _recover(runner, seen[0].invocation_id)

    assert [e.author for e in recovered] == ["greeter"]
    assert _final_text(recovered) == "hello"


async def test_a_stored_user_event_is_not_stored_again() -> None:
    """The id an attempt stores its user event under tells the next attempt it is there."""
    model = ScriptModel(replies=[text_response("hello")])
    runner = InMemoryRunner(LlmAgent(name="greeter", model=model), app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    kwargs: dict[str, Any] = {
        "user_id": "u",
        "session_id": "s",
        "new_message": user_message("hi"),
        "invocation_id": "inv-1",
        "user_event_id": "user-event-1",
    }
    run = runner.run_invocation(**kwargs)
    first = await run.__anext__()
    await run.aclose()
    assert first.id == "user-event-1"

    again = [e async for e in runner.run_invocation(**kwargs, recover=True)]

    assert [e.author for e in again] == ["greeter"]
    assert [e.author for e in await _history(runner)] == ["user", "greeter"]
