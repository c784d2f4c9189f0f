"""LlmAgent's ADK fields with ADK's behaviour: structured output, input schemas, planners,
code executors, static instructions (issue 16)."""

from collections.abc import Iterator
from typing import Any

import pytest
from google.genai import types
from pydantic import BaseModel, ValidationError

from app.agents import LlmAgent
from app.code_executors import BuiltInCodeExecutor, UnsafeLocalCodeExecutor
from app.errors import InvocationFailed, LocalCodeExecutionDisabled
from app.invocations.runner import InMemoryRunner
from app.models.llm import LlmResponse
from app.planners import BuiltInPlanner, PlanReActPlanner
from app.settings import get_settings
from app.tools import AgentTool
from tests.engine.helpers import (
    ScriptModel,
    calls_response,
    request_texts,
    run_turn,
    text_response,
    texts,
)


class Capital(BaseModel):
    """The answer of the capital agent."""

    country: str
    capital: str
    population: int | None = None


async def _runner(agent: LlmAgent) -> InMemoryRunner:
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner


async def _state(runner: InMemoryRunner) -> dict[str, Any]:
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return dict(session.state)


def lookup(country: str) -> str:
    """Looks the capital up.

    Args:
        country: the country.
    """
    return {"France": "Paris"}.get(country, "unknown")


# -- output_schema ---------------------------------------------------------------------------


async def test_output_schema_asks_for_json_and_stores_the_validated_answer() -> None:
    model = ScriptModel(replies=[text_response('{"country": "France", "capital": "Paris"}')])
    agent = LlmAgent(name="agent", model=model, output_schema=Capital, output_key="answer")
    runner = await _runner(agent)

    events = await run_turn(runner, "France?")

    config = model.requests[0].config
    assert config.response_schema is Capital
    assert config.response_mime_type == "application/json"
    assert events[-1].is_final_response()
    # Stored as data (None fields dropped, as ADK's model_dump(exclude_none=True)), not as text.
    assert (await _state(runner))["answer"] == {"country": "France", "capital": "Paris"}
    assert events[-1].actions.state_delta == {"answer": {"country": "France", "capital": "Paris"}}


async def test_an_answer_that_does_not_match_the_schema_fails_the_step() -> None:
    model = ScriptModel(replies=[text_response('{"country": "France"}')])
    agent = LlmAgent(name="agent", model=model, output_schema=Capital, output_key="answer")
    runner = await _runner(agent)

    with pytest.raises(InvocationFailed) as failure:
        await run_turn(runner, "France?")

    assert isinstance(failure.value.__cause__, ValidationError)
    assert "answer" not in await _state(runner)


async def test_output_schema_may_be_any_type_pydantic_validates() -> None:
    model = ScriptModel(replies=[text_response('["Paris", "Lyon"]')])
    agent = LlmAgent(name="agent", model=model, output_schema=list[str], output_key="cities")
    runner = await _runner(agent)

    await run_turn(runner, "cities?")

    assert (await _state(runner))["cities"] == ["Paris", "Lyon"]


async def test_output_schema_with_tools_answers_through_set_model_response() -> None:
    model = ScriptModel(
        replies=[
            calls_response(("lookup", {"country": "France"})),
            calls_response(("set_model_response", {"country": "France", "capital": "Paris"})),
            text_response("never asked"),
        ]
    )
    agent = LlmAgent(
        name="agent", model=model, tools=[lookup], output_schema=Capital, output_key="answer"
    )
    runner = await _runner(agent)

    events = await run_turn(runner, "France?")

    first = model.requests[0]
    # Gemini's API cannot take a response schema with tools: the schema becomes a tool.
    assert first.config.response_schema is None
    assert set(first.tools_dict) == {"lookup", "set_model_response"}
    declaration = first.tools_dict["set_model_response"].get_declaration()
    assert declaration.parameters_json_schema["required"] == ["country", "capital"]
    assert "calling set_model_response" in first.system_instruction_text()
    assert len(model.requests) == 2
    final = events[-1]
    assert final.is_final_response()
    assert final.content is not None
    assert final.content.parts is not None
    assert final.content.parts[0].text == '{"country": "France", "capital": "Paris"}'
    assert (await _state(runner))["answer"] == {"country": "France", "capital": "Paris"}


# -- input_schema ----------------------------------------------------------------------------


class CountryQuery(BaseModel):
    """What the capital agent takes."""

    country: str
    language: str = "en"


async def test_input_schema_declares_an_agent_tool_and_reaches_the_agent_as_json() -> None:
    inner_model = ScriptModel(replies=[text_response('{"country": "France", "capital": "Paris"}')])
    inner = LlmAgent(
        name="capitals",
        description="Finds capitals.",
        model=inner_model,
        input_schema=CountryQuery,
        output_schema=Capital,
    )
    outer_model = ScriptModel(
        replies=[calls_response(("capitals", {"country": "France"})), text_response("Paris.")]
    )
    runner = await _runner(LlmAgent(name="agent", model=outer_model, tools=[AgentTool(inner)]))

    events = await run_turn(runner, "capital of France?")

    declaration = outer_model.requests[0].tools_dict["capitals"].get_declaration()
    assert declaration.parameters_json_schema["properties"].keys() == {"country", "language"}
    assert request_texts(inner_model.requests[0])[-1] == '{"country":"France","language":"en"}'
    (response,) = events[2].get_function_responses()
    assert response.response == {"country": "France", "capital": "Paris"}
    assert texts(events)[-1] == "Paris."


# -- planners --------------------------------------------------------------------------------


async def test_built_in_planner_sets_thinking_and_thoughts_stay_out_of_the_answer() -> None:
    thinking = types.ThinkingConfig(include_thoughts=True, thinking_budget=256)
    model = ScriptModel(
        replies=[
            LlmResponse(
                content=types.Content(
                    role="model",
                    parts=[
                        types.Part(text="The user wants a capital.", thought=True),
                        types.Part(text="Paris."),
                    ],
                )
            )
        ]
    )
    agent = LlmAgent(
        name="agent",
        model=model,
        planner=BuiltInPlanner(thinking_config=thinking),
        output_key="answer",
    )
    runner = await _runner(agent)

    events = await run_turn(runner, "France?")

    assert model.requests[0].config.thinking_config == thinking
    assert events[-1].content is not None
    assert events[-1].content.parts is not None
    assert [p.thought for p in events[-1].content.parts] == [True, None]
    assert (await _state(runner))["answer"] == "Paris."


async def test_plan_re_act_planner_instructs_and_splits_plan_from_answer() -> None:
    model = ScriptModel(
        replies=[
            text_response("/*PLANNING*/1. Look up France.\n/*FINAL_ANSWER*/Paris."),
            text_response("/*FINAL_ANSWER*/Lyon."),
        ]
    )
    agent = LlmAgent(name="agent", model=model, planner=PlanReActPlanner(), output_key="answer")
    runner = await _runner(agent)

    events = await run_turn(runner, "France?")

    assert "/*PLANNING*/" in model.requests[0].system_instruction_text()
    assert "/*FINAL_ANSWER*/" in model.requests[0].system_instruction_text()
    assert events[-1].content is not None
    parts = events[-1].content.parts
    assert parts is not None
    assert [(p.text, p.thought) for p in parts] == [
        ("1. Look up France.\n/*FINAL_ANSWER*/", True),
        ("Paris.", None),
    ]
    assert (await _state(runner))["answer"] == "Paris."

    await run_turn(runner, "and its second city?")

    # The next request carries the earlier plan as plain text (ADK removes the thought marks),
    # while the stored event keeps them.
    earlier = model.requests[1].contents[1]
    assert earlier.parts is not None
    assert [p.thought for p in earlier.parts] == [None, None]
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    stored = session.events[1].content
    assert stored is not None
    assert stored.parts is not None
    assert stored.parts[0].thought is True


async def test_plan_re_act_keeps_only_the_first_group_of_function_calls() -> None:
    reply = LlmResponse(
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="/*PLANNING*/look it up"),
                types.Part(function_call=types.FunctionCall(name="lookup", args={"country": "A"})),
                types.Part(function_call=types.FunctionCall(name="lookup", args={"country": "B"})),
                types.Part(text="/*ACTION*/ more"),
                types.Part(function_call=types.FunctionCall(name="lookup", args={"country": "C"})),
            ],
        )
    )
    model = ScriptModel(replies=[reply, text_response("/*FINAL_ANSWER*/done")])
    agent = LlmAgent(name="agent", model=model, tools=[lookup], planner=PlanReActPlanner())
    runner = await _runner(agent)

    events = await run_turn(runner, "A and B?")

    calls = events[1].get_function_calls()
    assert [c.args for c in calls] == [{"country": "A"}, {"country": "B"}]
    assert len(events[2].get_function_responses()) == 2


# -- static_instruction ----------------------------------------------------------------------


async def test_static_instruction_leads_and_the_instruction_moves_to_the_contents() -> None:
    model = ScriptModel(replies=[text_response("ok")])
    agent = LlmAgent(
        name="agent",
        model=model,
        static_instruction=types.Content(parts=[types.Part(text="You are a {role}. Be brief.")]),
        instruction="The user is {name}.",
    )
    runner = await _runner(agent)

    await run_turn(runner, "hi", state_delta={"name": "Ada", "role": "pirate"})

    request = model.requests[0]
    # Never templated (a stable prefix), and the dynamic instruction is not in the system text.
    assert request.system_instruction_text() == "You are a {role}. Be brief."
    last = request.contents[-1]
    assert last.role == "user"
    assert last.parts is not None
    assert last.parts[0].text == "The user is Ada."


async def test_without_static_instruction_the_instruction_is_the_system_instruction() -> None:
    model = ScriptModel(replies=[text_response("ok")])
    agent = LlmAgent(name="agent", model=model, static_instruction="Static.", instruction="")
    runner = await _runner(agent)

    await run_turn(runner, "hi")

    assert model.requests[0].system_instruction_text() == "Static."
    assert request_texts(model.requests[0]) == ["hi"]


# -- code executors --------------------------------------------------------------------------


async def test_built_in_code_executor_declares_geminis_code_tool() -> None:
    model = ScriptModel(model="gemini-2.5-flash", replies=[text_response("42")])
    runner = await _runner(LlmAgent(name="agent", model=model, code_executor=BuiltInCodeExecutor()))

    await run_turn(runner, "6*7?")

    tools = model.requests[0].config.tools or []
    assert any(isinstance(t, types.Tool) and t.code_execution is not None for t in tools)


async def test_built_in_code_executor_refuses_models_without_code_execution() -> None:
    model = ScriptModel(model="gpt-4o", replies=[text_response("42")])
    runner = await _runner(LlmAgent(name="agent", model=model, code_executor=BuiltInCodeExecutor()))

    with pytest.raises(InvocationFailed) as failure:
        await run_turn(runner, "6*7?")
    assert "not supported for model gpt-4o" in str(failure.value.__cause__)


@pytest.fixture
def local_code_allowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """AGENTD_ALLOW_LOCAL_CODE_EXECUTION=true for one test (settings read afresh)."""
    monkeypatch.setenv("AGENTD_ALLOW_LOCAL_CODE_EXECUTION", "true")
    monkeypatch.setenv("AGENTD_CODE_EXECUTION_TIMEOUT_SECONDS", "5")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_the_local_executor_cannot_be_built_without_the_opt_in() -> None:
    get_settings.cache_clear()
    with pytest.raises(LocalCodeExecutionDisabled) as refused:
        UnsafeLocalCodeExecutor()
    assert "AGENTD_ALLOW_LOCAL_CODE_EXECUTION=true" in str(refused.value.detail)


@pytest.mark.usefixtures("local_code_allowed")
async def test_the_local_executor_runs_the_code_block_and_the_model_reads_its_output() -> None:
    model = ScriptModel(
        replies=[
            text_response("Let me compute.\n```python\nprint(6 * 7)\n```\nignored tail"),
            text_response("It is 42."),
        ]
    )
    agent = LlmAgent(name="agent", model=model, code_executor=UnsafeLocalCodeExecutor())
    runner = await _runner(agent)

    events = await run_turn(runner, "6*7?")

    code_event, result_event, answer = events[1:]
    assert code_event.content is not None
    assert code_event.content.parts is not None
    assert code_event.content.parts[0].text == "Let me compute.\n"
    executable = code_event.content.parts[1].executable_code
    assert executable is not None
    assert executable.code == "print(6 * 7)"
    assert len(code_event.content.parts) == 2  # the text after the block is dropped
    assert result_event.content is not None
    assert result_event.content.parts is not None
    result = result_event.content.parts[0].code_execution_result
    assert result is not None
    assert result.outcome == types.Outcome.OUTCOME_OK
    assert result.output == "Code execution result:\n42\n\n"
    assert not result_event.is_final_response()
    assert texts([answer]) == ["It is 42."]
    # The model, which cannot run code itself, sees code and output as text.
    seen = request_texts(model.requests[1])
    assert "```tool_code\nprint(6 * 7)\n```" in seen
    assert "```tool_output\nCode execution result:\n42\n\n\n```" in seen


@pytest.mark.usefixtures("local_code_allowed")
async def test_a_failing_or_endless_code_block_reports_to_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTD_CODE_EXECUTION_TIMEOUT_SECONDS", "0.5")
    get_settings.cache_clear()
    model = ScriptModel(
        replies=[
            text_response("```python\nraise SystemExit('boom')\n```"),
            text_response("```python\nimport time\ntime.sleep(30)\n```"),
            text_response("gave up"),
        ]
    )
    agent = LlmAgent(name="agent", model=model, code_executor=UnsafeLocalCodeExecutor())
    runner = await _runner(agent)

    events = await run_turn(runner, "go")

    outputs = [
        p.code_execution_result
        for e in events
        for p in (e.content.parts or [] if e.content else [])
        if p.code_execution_result is not None
    ]
    assert [o.outcome for o in outputs] == [types.Outcome.OUTCOME_FAILED] * 2
    assert "boom" in (outputs[0].output or "")
    assert outputs[1].output == "Code execution timed out after 0.5 s."
    assert texts(events)[-1] == "gave up"


# -- the rest --------------------------------------------------------------------------------


def test_unknown_fields_stay_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="output_shema"):
        LlmAgent(name="agent", model="gemini-2.5-flash", output_shema=Capital)  # type: ignore[call-arg]
