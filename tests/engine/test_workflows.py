"""ParallelAgent, LoopAgent, transfer_to_agent and max_llm_calls over the database services."""

import pytest

from app.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from app.contexts.invocation import LlmCallsLimitExceededError, RunConfig
from app.tools import exit_loop
from tests.engine.conftest import Services
from tests.engine.helpers import (
    ScriptModel,
    calls_response,
    request_texts,
    run_turn,
    text_response,
    texts,
)


async def test_parallel_branches_see_only_their_own_history_and_share_state(
    services: Services,
) -> None:
    left_model = ScriptModel(replies=[text_response("left answer")])
    right_model = ScriptModel(replies=[text_response("right answer")])
    left = LlmAgent(name="left", model=left_model, output_key="left_out")
    right = LlmAgent(name="right", model=right_model, output_key="right_out")
    fan_out = ParallelAgent(name="fan", sub_agents=[left, right])
    summary_model = ScriptModel(replies=[text_response("summary")])
    summarize = LlmAgent(
        name="summarize", model=summary_model, instruction="Combine {left_out} and {right_out}."
    )
    pipeline = SequentialAgent(name="pipeline", sub_agents=[fan_out, summarize])
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    await run_turn(services.runner(pipeline), "first")
    events = await run_turn(services.runner(pipeline), "second")

    branches = {e.author: e.branch for e in events if e.author in ("left", "right")}
    assert branches == {"left": "fan.left", "right": "fan.right"}
    # In the second turn each branch sees the shared history (user turns, the summary, as
    # context) and its own earlier answer, never the sibling branch's.
    shared_summary = ["For context:", "[summarize] said: summary"]
    assert request_texts(left_model.requests[1]) == [
        "first",
        "left answer",
        *shared_summary,
        "second",
    ]
    assert request_texts(right_model.requests[1]) == [
        "first",
        "right answer",
        *shared_summary,
        "second",
    ]
    # Both branches' output keys landed in the shared state the next agent reads.
    instruction = summary_model.requests[1].system_instruction_text()
    assert instruction == "Combine left answer and right answer."
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert stored.state == {"left_out": "left answer", "right_out": "right answer"}
    assert [e.seq for e in stored.events] == list(range(1, len(stored.events) + 1))


async def test_loop_stops_when_a_sub_agent_escalates(services: Services) -> None:
    model = ScriptModel(
        replies=[
            text_response("draft 1"),
            text_response("draft 2"),
            calls_response(("exit_loop", {})),
        ]
    )
    writer = LlmAgent(name="writer", model=model, tools=[exit_loop])
    loop = LoopAgent(name="loop", sub_agents=[writer], max_iterations=10)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(services.runner(loop), "write")
    assert texts(events) == ["write", "draft 1", "draft 2"]
    assert len(model.requests) == 3
    assert events[-1].actions.escalate is True


async def test_loop_respects_max_iterations(services: Services) -> None:
    model = ScriptModel(replies=[text_response("again")])
    loop = LoopAgent(name="loop", sub_agents=[LlmAgent(name="w", model=model)], max_iterations=3)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(services.runner(loop), "go")
    assert texts(events) == ["go", "again", "again", "again"]


async def test_transfer_to_agent_hands_over_the_turn_and_the_next_one(
    services: Services,
) -> None:
    billing_model = ScriptModel(replies=[text_response("billing here")])
    billing = LlmAgent(name="billing", description="Invoices.", model=billing_model)
    root_model = ScriptModel(
        replies=[calls_response(("transfer_to_agent", {"agent_name": "billing"}))]
    )
    root = LlmAgent(name="root", model=root_model, sub_agents=[billing])
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    events = await run_turn(services.runner(root), "my invoice is wrong")
    assert [e.author for e in events] == ["user", "root", "root", "billing"]
    assert events[2].actions.transfer_to_agent == "billing"
    assert texts(events)[-1] == "billing here"
    declared = [
        d.name
        for tool in root_model.requests[0].config.tools or []
        for d in tool.function_declarations or []  # type: ignore[union-attr]
    ]
    assert declared == ["transfer_to_agent"]

    # The conversation stays with billing for the next message.
    follow_up = await run_turn(services.runner(root), "and another thing")
    assert [e.author for e in follow_up] == ["user", "billing"]
    assert len(root_model.requests) == 1


async def test_max_llm_calls_raises_a_typed_error_and_records_it(services: Services) -> None:
    def ping() -> str:
        """Always asks for more."""
        return "pong"

    model = ScriptModel(replies=[calls_response(("ping", {}))])
    agent = LlmAgent(name="agent", model=model, tools=[ping])
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    with pytest.raises(LlmCallsLimitExceededError):
        await run_turn(services.runner(agent), "go", run_config=RunConfig(max_llm_calls=3))
    assert len(model.requests) == 3
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[-1].error_code == "llm-calls-limit-exceeded"
    # Three complete call/response pairs before the limit, nothing half-written.
    assert [bool(e.get_function_calls()) for e in stored.events[1:-1]] == [True, False] * 3
    assert RunConfig().max_llm_calls == 500
