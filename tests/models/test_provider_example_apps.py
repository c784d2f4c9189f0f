"""The shipped openai_agent and claude_agent apps: they explain their setup without a key and
answer through their provider once configured (against the local stubs)."""

from pathlib import Path

import pytest

from app.agents import LlmAgent
from app.invocations.registry import AppRegistry
from app.invocations.runner import InMemoryRunner
from tests.anthropic_stub import AnthropicStub
from tests.engine.helpers import run_turn, texts
from tests.openai_stub import OpenAIStub

AGENTS = Path(__file__).resolve().parents[2] / "agents"


@pytest.fixture
def registry() -> AppRegistry:
    """The project's agents folder, loaded afresh for each test."""
    return AppRegistry(AGENTS)


async def _ask(registry: AppRegistry, app_name: str, text: str) -> list[str]:
    app = registry.load(app_name)
    runner = InMemoryRunner(app.root_agent, app_name=app_name)
    await runner.session_service.create_session(app_name=app_name, user_id="u", session_id="s")
    return texts(await run_turn(runner, text))


@pytest.mark.parametrize(
    ("app_name", "variables"),
    [
        ("openai_agent", ["OPENAI_API_KEY", "OPENAI_BASE_URL"]),
        ("claude_agent", ["ANTHROPIC_API_KEY"]),
    ],
)
async def test_without_configuration_the_app_says_what_to_set(
    registry: AppRegistry, monkeypatch: pytest.MonkeyPatch, app_name: str, variables: list[str]
) -> None:
    for variable in variables:
        monkeypatch.delenv(variable, raising=False)

    answer = (await _ask(registry, app_name, "capital of France?"))[-1]

    assert answer.startswith(f"{app_name} is not configured")
    for variable in variables:
        assert variable in answer


async def test_openai_agent_answers_through_an_openai_compatible_server(
    registry: AppRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIStub() as stub:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        stub.reply_tool_calls(("call_1", "get_capital_city", {"country": "France"}))
        stub.reply_text("The capital of France is Paris.")
        agent = registry.load("openai_agent").root_agent
        assert isinstance(agent, LlmAgent)

        answer = (await _ask(registry, "openai_agent", "capital of France?"))[-1]

        assert answer == "The capital of France is Paris."
        assert stub.requests[0]["body"]["model"] == "gpt-4o-mini"
        tool_messages = [m for m in stub.requests[1]["body"]["messages"] if m["role"] == "tool"]
        assert '"Paris"' in tool_messages[0]["content"]


async def test_claude_agent_answers_through_the_messages_api(
    registry: AppRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    with AnthropicStub() as stub:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
        stub.reply_tool_use(("toolu_1", "get_capital_city", {"country": "France"}))
        stub.reply_text("The capital of France is Paris.")

        answer = (await _ask(registry, "claude_agent", "capital of France?"))[-1]

        assert answer == "The capital of France is Paris."
        assert stub.requests[0]["body"]["model"] == "claude-sonnet-5-5"
