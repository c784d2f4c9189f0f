"""The callbacks guide's examples run on agentd with only their imports (and model) changed.

Each example in `guide/` is the guide's code with `google.adk` replaced by `app` and the Gemini
model name replaced by the offline scripted model; it is executed as written (top-level `await`
as in a notebook), its prints are captured, and further turns reuse its own `call_agent`.
"""

import ast
import asyncio
import inspect
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import pytest

from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import ScriptedLlm

GUIDE = Path(__file__).parent / "guide"


def run_example(name: str) -> dict[str, Any]:
    """Execute guide/<name>.py like a notebook cell; return its namespace."""
    path = GUIDE / f"{name}.py"
    code = compile(path.read_text(), str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {"__name__": f"guide_{name}"}
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)
    return namespace


def call(namespace: dict[str, Any], query: str) -> None:
    """Run the example's own call_agent (sync or async) for `query`."""
    call_agent: Callable[[str], Any] = namespace["call_agent"]
    result = call_agent(query)
    if inspect.iscoroutine(result):
        asyncio.run(result)


@pytest.fixture
def model_calls(monkeypatch: pytest.MonkeyPatch) -> list[LlmRequest]:
    """Every request the scripted model actually received."""
    seen: list[LlmRequest] = []
    original = ScriptedLlm.generate_content_async

    async def spy(
        self: ScriptedLlm, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        seen.append(llm_request)
        async for response in original(self, llm_request, stream):
            yield response

    monkeypatch.setattr(ScriptedLlm, "generate_content_async", spy)
    return seen


def test_before_model_callback_modifies_the_request_and_block_skips_the_model(
    capsys: pytest.CaptureFixture[str], model_calls: list[LlmRequest]
) -> None:
    namespace = run_example("before_model")
    out = capsys.readouterr().out
    assert "[Callback] Proceeding with LLM call." in out
    assert "Agent Response:  Hello!" in out
    assert len(model_calls) == 1
    instruction = model_calls[0].config.system_instruction
    assert instruction is not None
    assert instruction.parts[0].text.startswith("[Modified by Callback] You are a helpful")  # type: ignore[union-attr,index]

    call(namespace, "Please BLOCK this")
    out = capsys.readouterr().out
    assert "[Callback] 'BLOCK' keyword found. Skipping LLM call." in out
    assert "Agent Response:  LLM call was blocked by before_model_callback." in out
    assert len(model_calls) == 1  # the model was not called for the blocked turn


def test_before_tool_callback_rewrites_canada_to_france_and_blocks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace = run_example("before_tool")
    out = capsys.readouterr().out
    assert "--- Tool 'get_capital_city' executing with country: callback example ---" in out
    assert "Agent Response:  Capital not found for callback example" in out

    call(namespace, "What is the capital of Canada?")
    out = capsys.readouterr().out
    assert "[Callback] Detected 'Canada'. Modifying args to 'France'." in out
    assert "--- Tool 'get_capital_city' executing with country: France ---" in out
    assert "Agent Response:  Paris" in out

    call(namespace, "BLOCK")
    out = capsys.readouterr().out
    assert "[Callback] Detected 'BLOCK'. Skipping tool execution." in out
    assert "--- Tool 'get_capital_city' executing" not in out
    assert "Agent Response:  Tool execution was blocked by before_tool_callback." in out


def test_after_tool_callback_adds_the_note_to_washington(
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace = run_example("after_tool")
    out = capsys.readouterr().out
    assert "[Callback] Detected 'Washington, D.C.'. Modifying tool response." in out
    assert "Agent Response:  Washington, D.C. (Note: This is the capital of the USA)." in out
    session = asyncio.run(
        namespace["session_service"].get_session(
            app_name="guardrail_app", user_id="user_1", session_id="session_001"
        )
    )
    (response,) = [r for e in session.events for r in e.get_function_responses()]
    assert response.response["note_added_by_callback"] is True

    call(namespace, "france")
    out = capsys.readouterr().out
    assert "[Callback] Passing original tool response through." in out
    assert "Agent Response:  Paris" in out


def test_before_agent_callback_skips_the_agent_when_state_says_so(
    capsys: pytest.CaptureFixture[str], model_calls: list[LlmRequest]
) -> None:
    run_example("before_agent")
    out = capsys.readouterr().out
    scenario_1, scenario_2 = out.split("SCENARIO 2")
    assert "Final Output: [MyControlledAgent] Hello!" in scenario_1
    assert (
        "Final Output: [MyControlledAgent] Agent MyControlledAgent skipped by "
        "before_agent_callback due to state." in scenario_2
    )
    assert "Hello!" not in scenario_2
    assert len(model_calls) == 1  # only scenario 1 reached the model


def test_after_agent_callback_replaces_the_output_when_state_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_example("after_agent")
    out = capsys.readouterr().out
    scenario_1, scenario_2 = out.split("SCENARIO 2")
    assert "Final Output: [MySimpleAgentWithAfter] Processing complete!" in scenario_1
    assert "Concluding note" not in scenario_1
    last_output = [line for line in scenario_2.splitlines() if line.startswith("Final Output")][-1]
    assert last_output == (
        "Final Output: [MySimpleAgentWithAfter] Concluding note added by after_agent_callback, "
        "replacing original output."
    )


def test_after_model_callback_rewrites_joke_to_funny_story(
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace = run_example("after_model")
    out = capsys.readouterr().out
    assert "[Callback] 'joke' not found. Passing original response through." in out
    assert "Agent Response:  Hello!" in out
    call(namespace, "Tell me a joke")
    out = capsys.readouterr().out
    assert "Agent Response:  Here is a funny story about a funny story." in out
