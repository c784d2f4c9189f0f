"""Where state written by callbacks and tools lands: which event, when visible, what persists."""

from typing import Any

from app.agents import LlmAgent, SequentialAgent
from app.agents.callback_context import CallbackContext
from app.models.llm import LlmRequest, LlmResponse
from app.sessions.models import Event
from app.tools.base_tool import BaseTool
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response


def _delta(event: Event) -> dict[str, Any]:
    return dict(event.actions.state_delta)


async def test_state_written_by_each_callback_and_tool_rides_on_its_event(
    services: Services,
) -> None:
    seen: dict[str, Any] = {}

    def before_agent(callback_context: CallbackContext) -> None:
        callback_context.state["ba"] = 1

    def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        del llm_request
        callback_context.state["bm"] = callback_context.state.get("bm", 0) + 1

    def after_model(callback_context: CallbackContext, llm_response: LlmResponse) -> None:
        del llm_response
        # Written by before_model in this same step and not persisted yet: visible at once.
        seen.setdefault("am_saw_bm", []).append(callback_context.state["bm"])
        callback_context.state["am"] = callback_context.state["bm"]

    def before_tool(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> None:
        del tool, args
        tool_context.state["bt"] = "x"

    def record(tool_context: ToolContext) -> str:
        """Writes state, reading what before_tool wrote a moment ago."""
        seen["tool_saw_bt"] = tool_context.state["bt"]
        tool_context.state["tool"] = "ran"
        tool_context.state["user:tool_runs"] = 1
        return "ok"

    def after_tool(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> None:
        del tool, args, tool_response
        tool_context.state["at"] = tool_context.state["tool"]

    def after_agent(callback_context: CallbackContext) -> None:
        seen["after_agent_saw"] = {k: callback_context.state.get(k) for k in ("ba", "at")}
        callback_context.state["aa"] = True

    agent = LlmAgent(
        name="agent",
        model=ScriptModel(replies=[calls_response(("record", {})), text_response("done")]),
        tools=[record],
        before_agent_callback=before_agent,
        before_model_callback=before_model,
        after_model_callback=after_model,
        before_tool_callback=before_tool,
        after_tool_callback=after_tool,
        after_agent_callback=after_agent,
    )
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(services.runner(agent), "go")

    assert [_delta(e) for e in events] == [
        {},  # the user's message
        {"ba": 1},  # before_agent: an actions-only event
        {"bm": 1, "am": 1},  # model callbacks ride on the function-call event
        {"bt": "x", "tool": "ran", "user:tool_runs": 1, "at": "ran"},  # function response
        {"bm": 2, "am": 2},  # the second model call's answer
        {"aa": True},  # after_agent
    ]
    assert seen == {
        "am_saw_bm": [1, 2],
        "tool_saw_bt": "x",
        "after_agent_saw": {"ba": 1, "at": "ran"},
    }
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert [_delta(e) for e in stored.events] == [_delta(e) for e in events]
    assert stored.state == {
        "ba": 1,
        "bm": 2,
        "am": 2,
        "bt": "x",
        "tool": "ran",
        "user:tool_runs": 1,
        "at": "ran",
        "aa": True,
    }


async def test_two_tools_writing_different_keys_in_one_step_both_persist(
    services: Services,
) -> None:
    def set_color(tool_context: ToolContext) -> str:
        """Writes one key."""
        tool_context.state["color"] = "blue"
        tool_context.state["user:likes"] = "blue"
        return "ok"

    def set_size(tool_context: ToolContext) -> str:
        """Writes another key."""
        tool_context.state["size"] = "L"
        tool_context.state["app:sizes_seen"] = 1
        return "ok"

    model = ScriptModel(
        replies=[calls_response(("set_color", {}), ("set_size", {})), text_response("done")]
    )
    agent = LlmAgent(name="agent", model=model, tools=[set_color, set_size])
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(services.runner(agent), "go")
    (response_event,) = [e for e in events if e.get_function_responses()]
    assert len(response_event.get_function_responses()) == 2
    assert _delta(response_event) == {
        "color": "blue",
        "user:likes": "blue",
        "size": "L",
        "app:sizes_seen": 1,
    }
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert {k: stored.state[k] for k in ("color", "size", "user:likes", "app:sizes_seen")} == {
        "color": "blue",
        "size": "L",
        "user:likes": "blue",
        "app:sizes_seen": 1,
    }


async def test_temp_state_reaches_a_later_sub_agent_and_is_never_stored(
    services: Services,
) -> None:
    seen: dict[str, Any] = {}

    def stash(callback_context: CallbackContext) -> None:
        callback_context.state["temp:draft"] = "secret draft"
        callback_context.state["kept"] = "yes"

    def read(callback_context: CallbackContext) -> None:
        seen["temp"] = callback_context.state.get("temp:draft")

    first = LlmAgent(name="first", model="scripted", before_agent_callback=stash)
    second = LlmAgent(
        name="second",
        model="scripted",
        instruction="Just say 'I saw {temp:draft}'",
        before_agent_callback=read,
    )
    pipeline = SequentialAgent(name="pipeline", sub_agents=[first, second])
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(services.runner(pipeline), "go")

    assert seen["temp"] == "secret draft"
    assert events[-1].content is not None
    assert events[-1].content.parts[0].text == "I saw secret draft"  # type: ignore[index]
    assert all("temp:draft" not in e.actions.state_delta for e in events)
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert stored.state == {"kept": "yes"}
    assert all("temp:draft" not in e.actions.state_delta for e in stored.events)
