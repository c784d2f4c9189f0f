"""Loading apps from the agents directory, the shipped offline apps, and memory from tools."""

import shutil
from pathlib import Path

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.artifacts.service import ArtifactScope
from app.errors import AppNotFound
from app.invocations.registry import AppLoadError, AppRegistry
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response, texts
from tests.shipped_apps import AGENTS, SHIPPED_APPS, shipped_agents_dir

SHIPPED = {
    "capital_agent": ("What is the capital of France?", "The capital of France is Paris."),
    "before_model_guardrail": ("BLOCK this", "LLM call was blocked by before_model_callback."),
    "before_tool_guardrail": ("What is the capital of Canada?", "Paris"),
    "after_tool_note": (
        "What is the capital of united states?",
        "Washington, D.C. (Note: This is the capital of the USA).",
    ),
    "skip_agent": ("Hello", "Hello!"),
    "concluding_note": ("Process this", "Processing complete!"),
    "after_model_rewrite": ("Tell me a joke", "Here is a funny story about a funny story."),
    "refund_agent": (
        "refund 20 for order C3",
        "{'status': 'refunded', 'order': 'C3', 'amount': 20.0}",
    ),
}


#: Apps that call a model provider once configured; their offline behaviour (they say what
#: to set) is tested with the provider variables cleared, in
#: tests/models/test_provider_example_apps.py.
PROVIDER_APPS = ("openai_agent", "claude_agent")
#: Apps whose tools come from a server agentd starts (an MCP server over stdio); tested over
#: HTTP, where the server process's life is agentd's, in tests/api/test_mcp_toolset_http.py.
TOOLSET_APPS = ("notes_agent",)


def test_every_shipped_app_is_listed_and_tested(tmp_path: Path) -> None:
    listed = [a.name for a in AppRegistry(shipped_agents_dir(tmp_path / "agents")).list_apps()]

    assert listed == list(SHIPPED_APPS)
    # Each is tested offline: here, or where the list above names.
    assert sorted(SHIPPED_APPS) == sorted([*SHIPPED, *PROVIDER_APPS, *TOOLSET_APPS])


def test_an_app_a_user_adds_is_served_but_not_to_the_suite(tmp_path: Path) -> None:
    # A copy of the project's agents folder, with an app added as "Writing an app" says.
    agents = tmp_path / "project" / "agents"
    for name in SHIPPED_APPS:
        shutil.copytree(AGENTS / name, agents / name)
    (agents / "weather").mkdir()
    (agents / "weather" / "agent.py").write_text(
        "from app.agents import LlmAgent\n\n"
        'root_agent = LlmAgent(name="weather", model="gemini-2.5-flash")\n'
    )

    served = [a.name for a in AppRegistry(agents).list_apps()]
    for_tests = AppRegistry(shipped_agents_dir(tmp_path / "suite", agents=agents)).list_apps()

    assert served == sorted([*SHIPPED_APPS, "weather"])
    assert [a.name for a in for_tests] == list(SHIPPED_APPS)


@pytest.mark.parametrize("app_name", sorted(SHIPPED))
async def test_shipped_app_answers_offline(services: Services, app_name: str) -> None:
    app = AppRegistry(AGENTS).load(app_name)
    question, answer = SHIPPED[app_name]
    await services.sessions.create_session(app_name=app_name, user_id="u", session_id="s")
    runner = services.runner(app.root_agent, app_name=app_name)
    events = await run_turn(runner, question)
    assert texts(events)[-1] == answer


async def test_capital_agent_records_state_and_a_notes_artifact_like_the_fixture(
    services: Services,
) -> None:
    app = AppRegistry(AGENTS).load("capital_agent")
    runner = services.runner(app.root_agent, app_name="capital_agent")
    for sid in ("s1", "s2"):
        await services.sessions.create_session(
            app_name="capital_agent", user_id="u", session_id=sid
        )
    await run_turn(runner, "What is the capital of France?", session_id="s1")
    events = await run_turn(runner, "What is the capital of Germany?", session_id="s1")
    (response_event,) = [e for e in events if e.get_function_responses()]
    assert response_event.actions.state_delta == {"last_country": "Germany", "user:visits": 2}
    assert response_event.actions.artifact_delta == {"notes.txt": 1}
    scope = ArtifactScope("capital_agent", "u", "s1")
    note = await services.artifacts.load_part(scope, filename="notes.txt")
    assert note == types.Part(text="Germany: Berlin")
    other = await services.sessions.get_session(
        app_name="capital_agent", user_id="u", session_id="s2"
    )
    assert other is not None
    assert other.state == {"user:visits": 2}


def test_broken_apps_fail_with_a_clear_problem(tmp_path: Path) -> None:
    (tmp_path / "raises").mkdir()
    (tmp_path / "raises" / "agent.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "agent.py").write_text("x = 1\n")
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "__init__.py").write_text("from . import agent\n")
    (tmp_path / "package" / "agent.py").write_text(
        "from app.agents import LlmAgent\nroot_agent = LlmAgent(name='p', model='scripted')\n"
    )
    registry = AppRegistry(tmp_path)
    with pytest.raises(AppLoadError) as raised:
        registry.load("raises")
    assert raised.value.type == "app-load-failed"
    assert "boom at import" in str(raised.value.detail)
    with pytest.raises(AppLoadError):
        registry.load("empty")
    with pytest.raises(AppNotFound):
        registry.load("missing")
    with pytest.raises(AppNotFound):
        registry.load("../etc")
    assert registry.load("package").root_agent.name == "p"


async def test_tools_search_the_users_memory(services: Services) -> None:
    await services.sessions.create_session(app_name="app", user_id="u", session_id="old")
    past_agent = LlmAgent(
        name="agent", model=ScriptModel(replies=[text_response("Your flight to Lisbon is booked.")])
    )
    await run_turn(services.runner(past_agent), "book Lisbon", session_id="old")
    old = await services.sessions.get_session(app_name="app", user_id="u", session_id="old")
    assert old is not None
    await services.memory.add_session_to_memory(old)

    async def recall(query: str, tool_context: ToolContext) -> list[str]:
        """Searches past conversations."""
        found = await tool_context.search_memory(query)
        return ["".join(p.text or "" for p in m.content.parts or []) for m in found.memories]

    agent = LlmAgent(
        name="agent",
        model=ScriptModel(
            replies=[calls_response(("recall", {"query": "lisbon"})), text_response("ok")]
        ),
        tools=[recall],
    )
    await services.sessions.create_session(app_name="app", user_id="u", session_id="new")
    events = await run_turn(services.runner(agent), "where am I flying?", session_id="new")
    (response,) = [r for e in events for r in e.get_function_responses()]
    assert response.response == {"result": ["Your flight to Lisbon is booked.", "book Lisbon"]}
