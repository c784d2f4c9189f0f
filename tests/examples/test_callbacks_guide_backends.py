"""The callbacks guide's examples with the model swapped to OpenAILlm and to Claude (issue 17,
acceptance 2), each through its real SDK against the local stub of its provider.

The guide files run as written except their `GEMINI_2_FLASH = ...` line, which names the
backend under test. The stubs answer from a script (what a real model would say at each step),
so the assertions are about what the callbacks do with a real provider's wire format: a
rewritten system instruction and rewritten tool arguments reach the provider, tool results
(with the after-tool note) go back to it, skipped steps never call it.
"""

import ast
import asyncio
import inspect
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.models.anthropic_llm import Claude
from app.models.llm import BaseLlm
from app.models.openai_llm import OpenAILlm
from tests.anthropic_stub import AnthropicStub
from tests.openai_stub import OpenAIStub

GUIDE = Path(__file__).parent / "guide"
_MODEL_LINE = re.compile(r"^GEMINI_2_FLASH\s*=.*$", re.MULTILINE)


@dataclass
class Provider:
    """One backend under test and the stub that plays its provider."""

    name: str
    llm: BaseLlm
    reply_text: Callable[[str], None]
    reply_call: Callable[[str, str, dict[str, Any]], None]
    requests: list[Any]

    def system(self, index: int) -> str:
        """The system instruction of request `index`, as the provider received it."""
        body = self.requests[index]["body"]
        if self.name == "anthropic":
            system = body.get("system", "")
            return system if isinstance(system, str) else "".join(b["text"] for b in system)
        return "".join(
            m["content"] if isinstance(m["content"], str) else ""
            for m in body["messages"]
            if m["role"] == "system"
        )

    def tool_results(self, index: int) -> list[Any]:
        """The function results request `index` carried back to the provider, decoded."""
        body = self.requests[index]["body"]
        if self.name == "openai":
            return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        results = []
        for message in body["messages"]:
            content = message["content"]
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    text = block["content"]
                    if isinstance(text, list):
                        text = "".join(b["text"] for b in text)
                    results.append(json.loads(text))
        return results


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    """The backend under test, pointed at its provider's stub."""
    if request.param == "openai":
        with OpenAIStub() as openai_stub:
            yield Provider(
                "openai",
                OpenAILlm(model="openai/gpt-4o-mini", api_key="k", base_url=openai_stub.base_url),
                openai_stub.reply_text,
                lambda call_id, name, args: openai_stub.reply_tool_calls((call_id, name, args)),
                openai_stub.requests,
            )
    else:
        with AnthropicStub() as anthropic_stub:
            yield Provider(
                "anthropic",
                Claude(model="claude-sonnet-5-5", api_key="k", base_url=anthropic_stub.base_url),
                anthropic_stub.reply_text,
                lambda call_id, name, args: anthropic_stub.reply_tool_use((call_id, name, args)),
                anthropic_stub.requests,
            )


def run_example(name: str, provider: Provider) -> dict[str, Any]:
    """Execute guide/<name>.py like a notebook cell, its model being the provider's backend."""
    path = GUIDE / f"{name}.py"
    source, count = _MODEL_LINE.subn("GEMINI_2_FLASH = __backend__", path.read_text(), count=1)
    assert count == 1, f"{path} names no GEMINI_2_FLASH model"
    code = compile(source, str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {"__name__": f"guide_{name}", "__backend__": provider.llm}
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)
    return namespace


def call(namespace: dict[str, Any], query: str) -> None:
    """Run the example's own call_agent (sync or async) for `query`."""
    result = namespace["call_agent"](query)
    if inspect.iscoroutine(result):
        asyncio.run(result)


def test_before_model_callback(provider: Provider, capsys: pytest.CaptureFixture[str]) -> None:
    provider.reply_text("Hello!")
    namespace = run_example("before_model", provider)
    out = capsys.readouterr().out
    assert "Agent Response:  Hello!" in out
    # The callback's rewrite of the system instruction reached the provider.
    assert provider.system(0).startswith("[Modified by Callback] You are a helpful")

    call(namespace, "Please BLOCK this")
    out = capsys.readouterr().out
    assert "Agent Response:  LLM call was blocked by before_model_callback." in out
    assert len(provider.requests) == 1  # the blocked turn never reached the provider


def test_before_tool_callback(provider: Provider, capsys: pytest.CaptureFixture[str]) -> None:
    provider.reply_call("call_1", "get_capital_city", {"country": "callback example"})
    provider.reply_text("Capital not found for callback example")
    namespace = run_example("before_tool", provider)
    out = capsys.readouterr().out
    assert "--- Tool 'get_capital_city' executing with country: callback example ---" in out

    provider.reply_call("call_2", "get_capital_city", {"country": "Canada"})
    provider.reply_text("Paris")
    call(namespace, "What is the capital of Canada?")
    out = capsys.readouterr().out
    assert "[Callback] Detected 'Canada'. Modifying args to 'France'." in out
    assert "--- Tool 'get_capital_city' executing with country: France ---" in out
    assert "Agent Response:  Paris" in out
    assert provider.tool_results(3)[-1] == {"result": "Paris"}

    provider.reply_call("call_3", "get_capital_city", {"country": "BLOCK"})
    provider.reply_text("Blocked.")
    call(namespace, "BLOCK")
    out = capsys.readouterr().out
    assert "[Callback] Detected 'BLOCK'. Skipping tool execution." in out
    assert "--- Tool 'get_capital_city' executing" not in out
    assert provider.tool_results(5)[-1] == {
        "result": "Tool execution was blocked by before_tool_callback."
    }


def test_after_tool_callback(provider: Provider, capsys: pytest.CaptureFixture[str]) -> None:
    provider.reply_call("call_1", "get_capital_city", {"country": "united states"})
    provider.reply_text("Washington, D.C. (Note: This is the capital of the USA).")
    run_example("after_tool", provider)
    out = capsys.readouterr().out
    assert "[Callback] Detected 'Washington, D.C.'. Modifying tool response." in out
    (result,) = provider.tool_results(1)
    assert result["note_added_by_callback"] is True
    assert result["result"] == "Washington, D.C. (Note: This is the capital of the USA)."


def test_before_agent_callback(provider: Provider, capsys: pytest.CaptureFixture[str]) -> None:
    provider.reply_text("Hello!")
    run_example("before_agent", provider)
    out = capsys.readouterr().out
    scenario_1, scenario_2 = out.split("SCENARIO 2")
    assert "Final Output: [MyControlledAgent] Hello!" in scenario_1
    assert "skipped by before_agent_callback due to state." in scenario_2
    assert len(provider.requests) == 1  # only scenario 1 reached the provider


def test_after_agent_callback(provider: Provider, capsys: pytest.CaptureFixture[str]) -> None:
    provider.reply_text("Processing complete!")
    provider.reply_text("Processing complete!")
    run_example("after_agent", provider)
    out = capsys.readouterr().out
    scenario_1, scenario_2 = out.split("SCENARIO 2")
    assert "Final Output: [MySimpleAgentWithAfter] Processing complete!" in scenario_1
    last = [line for line in scenario_2.splitlines() if line.startswith("Final Output")][-1]
    assert last.endswith(
        "Concluding note added by after_agent_callback, replacing original output."
    )


def test_after_model_callback(provider: Provider, capsys: pytest.CaptureFixture[str]) -> None:
    provider.reply_text("Hello!")
    namespace = run_example("after_model", provider)
    assert "Agent Response:  Hello!" in capsys.readouterr().out

    provider.reply_text("Here is a joke about a joke.")
    call(namespace, "Tell me a joke")
    assert "Agent Response:  Here is a funny story about a funny story." in capsys.readouterr().out
