"""LlmAgent details: instructions, include_contents, concurrent tools, FunctionTool, AgentTool."""

import asyncio
from enum import Enum
from typing import Literal

from google.genai import types
from pydantic import BaseModel

from app.agents import LlmAgent, ReadonlyContext
from app.invocations.runner import Runner
from app.sessions import InMemorySessionService
from app.tools import AgentTool, FunctionTool
from app.tools.tool_context import ToolContext
from tests.engine.helpers import (
    ScriptModel,
    calls_response,
    request_texts,
    run_turn,
    text_response,
    texts,
)


async def _runner(agent: LlmAgent) -> Runner:
    sessions = InMemorySessionService()
    await sessions.create_session(
        app_name="app", user_id="u", session_id="s", state={"name": "Ada"}
    )
    return Runner(app_name="app", agent=agent, session_service=sessions)


async def test_instruction_templates_and_providers_read_state() -> None:
    seen: list[str] = []

    async def provider(context: ReadonlyContext) -> str:
        seen.append(context.agent_name)
        return f"Greet {context.state['name']} {{not_a_placeholder}}"

    templated = ScriptModel(replies=[text_response("hi")])
    runner = await _runner(
        LlmAgent(name="t", model=templated, instruction="Greet {name}{missing?}.")
    )
    await run_turn(runner, "hello")
    assert templated.requests[0].system_instruction_text() == "Greet Ada."

    provided = ScriptModel(replies=[text_response("hi")])
    runner = await _runner(LlmAgent(name="p", model=provided, instruction=provider))
    await run_turn(runner, "hello")
    # Providers are not templated: their braces reach the model untouched.
    assert provided.requests[0].system_instruction_text() == "Greet Ada {not_a_placeholder}"
    assert seen == ["p"]


async def test_include_contents_none_sends_only_the_current_turn() -> None:
    model = ScriptModel(replies=[text_response("ok")])
    runner = await _runner(LlmAgent(name="a", model=model, include_contents="none"))
    await run_turn(runner, "first")
    await run_turn(runner, "second")
    assert request_texts(model.requests[1]) == ["second"]


async def test_function_calls_of_one_response_run_concurrently() -> None:
    left_ready, right_ready = asyncio.Event(), asyncio.Event()

    async def left() -> str:
        """Waits for right."""
        left_ready.set()
        await asyncio.wait_for(right_ready.wait(), timeout=5)
        return "left"

    async def right() -> str:
        """Waits for left."""
        right_ready.set()
        await asyncio.wait_for(left_ready.wait(), timeout=5)
        return "right"

    model = ScriptModel(
        replies=[calls_response(("left", {}), ("right", {})), text_response("done")]
    )
    runner = await _runner(LlmAgent(name="a", model=model, tools=[left, right]))
    events = await run_turn(runner, "go")
    (response_event,) = [e for e in events if e.get_function_responses()]
    assert [r.response for r in response_event.get_function_responses()] == [
        {"result": "left"},
        {"result": "right"},
    ]


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    city: str
    zip_code: str | None = None


def plan_trip(
    city: str,
    days: int,
    budget: float,
    tags: list[str],
    color: Color,
    mode: Literal["car", "train"],
    address: Address,
    tool_context: ToolContext,
    flexible: bool = False,
    note: str | None = None,
) -> int:
    """Plans a trip.

    Args:
        city: where to go.
        days: how long,
            in days.
        budget: in euros.
    """
    del city, budget, tags, color, mode, address, tool_context, flexible, note
    return days


def test_function_tool_declaration_comes_from_signature_and_docstring() -> None:
    declaration = FunctionTool(plan_trip).get_declaration()
    assert declaration.name == "plan_trip"
    assert declaration.description == "Plans a trip."
    assert declaration.parameters is not None
    props = declaration.parameters.properties or {}
    assert list(props) == [
        "city",
        "days",
        "budget",
        "tags",
        "color",
        "mode",
        "address",
        "flexible",
        "note",
    ]
    assert "tool_context" not in props
    T = types.Type
    assert {n: p.type for n, p in props.items()} == {
        "city": T.STRING,
        "days": T.INTEGER,
        "budget": T.NUMBER,
        "tags": T.ARRAY,
        "color": T.STRING,
        "mode": T.STRING,
        "address": T.OBJECT,
        "flexible": T.BOOLEAN,
        "note": T.STRING,
    }
    assert props["tags"].items is not None
    assert props["tags"].items.type == T.STRING
    assert props["color"].enum == ["red", "blue"]
    assert props["mode"].enum == ["car", "train"]
    assert props["note"].nullable is True
    assert props["days"].description == "how long, in days."
    assert props["address"].required == ["city"]
    assert declaration.parameters.required == [
        "city",
        "days",
        "budget",
        "tags",
        "color",
        "mode",
        "address",
    ]


async def test_function_tool_wraps_results_injects_context_and_reports_missing_args() -> None:
    def whoami(tool_context: ToolContext) -> str:
        """Returns the caller's user id."""
        return tool_context.user_id

    def needs_arg(city: str) -> dict[str, str]:
        """Returns a dict as is."""
        return {"city": city}

    model = ScriptModel(
        replies=[
            calls_response(("whoami", {}), ("needs_arg", {}), ("needs_arg", {"city": "Rome"})),
            text_response("done"),
        ]
    )
    runner = await _runner(LlmAgent(name="a", model=model, tools=[whoami, needs_arg]))
    events = await run_turn(runner, "go")
    responses = [r.response for e in events for r in e.get_function_responses()]
    assert responses[0] == {"result": "u"}
    assert responses[1] is not None
    assert "mandatory input parameters are not present: city" in str(responses[1]["error"])
    assert responses[2] == {"city": "Rome"}


async def test_agent_tool_runs_the_agent_and_forwards_its_state() -> None:
    helper = LlmAgent(
        name="translator",
        description="Translates text.",
        model=ScriptModel(replies=[text_response("bonjour")]),
        output_key="last_translation",
    )
    model = ScriptModel(
        replies=[calls_response(("translator", {"request": "hello"})), text_response("done")]
    )
    runner = await _runner(LlmAgent(name="a", model=model, tools=[AgentTool(helper)]))
    events = await run_turn(runner, "translate hello")
    (response_event,) = [e for e in events if e.get_function_responses()]
    assert response_event.get_function_responses()[0].response == {"result": "bonjour"}
    assert response_event.actions.state_delta == {"last_translation": "bonjour"}
    assert texts(events)[-1] == "done"
