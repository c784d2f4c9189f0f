"""ADK's built-in tools run through an LlmAgent: long-running calls, artifacts, memory."""

from google.genai import types

from app.agents import LlmAgent
from app.invocations.runner import InMemoryRunner
from app.tools import LongRunningFunctionTool
from app.tools.tool_context import ToolContext
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response


async def _in_memory_runner(agent: LlmAgent) -> InMemoryRunner:
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner


def _answer(call_id: str, name: str, response: dict[str, object]) -> types.Content:
    """The client's late answer to a long-running call."""
    part = types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response=response)
    )
    return types.Content(role="user", parts=[part])


def ask_for_approval(amount: int, tool_context: ToolContext) -> None:
    """Asks a manager to approve a reimbursement.

    Args:
        amount: the amount to reimburse.
    """
    tool_context.state["asked"] = amount


async def test_a_long_running_call_pauses_the_invocation_until_the_client_answers_it() -> None:
    model = ScriptModel(
        replies=[calls_response(("ask_for_approval", {"amount": 50})), text_response("approved")]
    )
    agent = LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(ask_for_approval)])
    runner = await _in_memory_runner(agent)

    events = await run_turn(runner, "reimburse 50")

    (call,) = events[-1].get_function_calls()
    assert call.id is not None
    assert events[-1].long_running_tool_ids == [call.id]
    assert not any(e.get_function_responses() for e in events)  # no answer yet: paused
    assert len(model.requests) == 1

    later = [
        e
        async for e in runner.run_async(
            user_id="u",
            session_id="s",
            new_message=_answer(call.id, "ask_for_approval", {"status": "approved"}),
        )
    ]

    assert later[-1].content is not None
    assert later[-1].content.parts is not None
    assert later[-1].content.parts[0].text == "approved"
    response = model.requests[-1].contents[-1].parts[0].function_response  # type: ignore[index]
    assert response is not None
    assert (response.id, response.response) == (call.id, {"status": "approved"})


def test_a_long_running_tool_tells_the_model_not_to_call_it_again() -> None:
    tool = LongRunningFunctionTool(ask_for_approval)

    declaration = tool.get_declaration()

    assert tool.is_long_running
    assert declaration.description is not None
    assert declaration.description.startswith("Asks a manager to approve a reimbursement.")
    assert "Do not call this tool again" in declaration.description
    assert declaration.parameters is not None
    assert list(declaration.parameters.properties or {}) == ["amount"]
