"""ADK documentation examples run on agentd with only their imports changed.

Each file in `docs/` is an example from ADK's documentation (its header names the page and lists
what was changed: the imports, `google.adk` -> `app`, and nothing else unless stated). The model
names are kept as the page wrote them (`gemini-...`): the Gemini backend is pointed at the local
Gemini API stub (tests/gemini_stub.py), which plays the model's side of each example from a
scripted FIFO and records what the model was sent. Files are executed like a notebook cell
(top-level `await`), as `__main__` of the package `tests.examples.docs` (so `if __name__ ==
"__main__": asyncio.run(main())` runs and `from .count_plugin import ...` resolves), their prints
are captured, and the assertions check what the page says happens.
"""

import ast
import asyncio
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.models.gemini import BASE_URL_ENV
from app.runners import InMemoryRunner, Runner
from app.sessions import InMemorySessionService
from app.sessions.models import Event
from app.tools.tool_context import ToolContext
from tests.gemini_stub import GeminiStub

DOCS = Path(__file__).parent / "docs"
PACKAGE = "tests.examples.docs"


def run_example(name: str, *, as_main: bool = True, **defined: Any) -> dict[str, Any]:
    """Execute docs/<name>.py like a notebook cell (top-level `await` allowed); return its names.

    It runs as `__main__` of the package `tests.examples.docs` unless `as_main` is False;
    `defined` are names the snippet uses but defines elsewhere on its page.
    """
    path = DOCS / f"{name}.py"
    code = compile(path.read_text(), str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {
        "__name__": "__main__" if as_main else f"{PACKAGE}.{name}",
        "__package__": PACKAGE,
        "__file__": str(path),
        **defined,
    }
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)
    return namespace


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiStub]:
    """The Gemini API stub, serving every `gemini-*` model the examples name."""
    with GeminiStub() as server:
        monkeypatch.setenv(BASE_URL_ENV, server.base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
        yield server


def reply_parts(stub: GeminiStub, *parts: dict[str, Any]) -> None:
    """Queue one model answer made of these (wire-format) parts."""
    stub.reply_json(
        {
            "candidates": [
                {"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 15},
        }
    )


def system_text(body: dict[str, Any]) -> str:
    """The system instruction a request carried, parts joined."""
    parts = body.get("systemInstruction", {}).get("parts", [])
    return "\n".join(part.get("text", "") for part in parts)


async def one_turn(runner: Runner, text: str, *, user_id: str, session_id: str) -> list[Event]:
    """Every event of one turn."""
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [
        event
        async for event in runner.run_async(
            user_id=user_id, session_id=session_id, new_message=message
        )
    ]


def wire_keys(mapping: dict[str, Any]) -> dict[str, Any]:
    """`mapping` with its keys as google-genai may spell them on the wire (camel or snake case)."""
    return {key.replace("_", "").lower(): value for key, value in mapping.items()}


def output_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


# --- Plugins and App ------------------------------------------------------------------------

PLUGIN_DOC_OUTPUT = [
    "[Plugin] Agent run count: 1",
    "[Plugin] LLM request count: 1",
    "** Got event from hello_world",
    "Hello world: query is [hello world]",
    "** Got event from hello_world",
    "[Plugin] LLM request count: 2",
    "** Got event from hello_world",
]


def plugin_and_tool_lines(out: str) -> list[str]:
    """The lines the plugin and the tool print (not the example's per-event lines).

    agentd's `run_async` also yields the user's message event ("** Got event from user"), which
    ADK's does not, so the page's exact log is not asserted here.
    """
    return [line for line in output_lines(out) if not line.startswith("** Got event from")]


def test_count_plugin_on_an_app_counts_agent_runs_and_model_requests(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.reply_function_call("hello_world", {"query": "hello world"})
    stub.reply_text("I printed hello world with your query.")
    namespace = run_example("plugins_app")

    out = capsys.readouterr().out
    assert plugin_and_tool_lines(out) == [
        line for line in PLUGIN_DOC_OUTPUT if not line.startswith("** Got event from")
    ]
    assert output_lines(out).count("** Got event from hello_world") == 3
    (plugin,) = namespace["app"].plugins
    assert (plugin.agent_count, plugin.llm_request_count, plugin.tool_count) == (1, 2, 0)
    first, second = stub.requests
    assert first["model"] == "gemini-flash-latest"
    (declaration,) = first["body"]["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "hello_world"
    assert "tool_context" not in json.dumps(declaration)  # injected, not declared
    function_response = second["body"]["contents"][-1]["parts"][0]["functionResponse"]
    assert function_response["name"] == "hello_world"


def test_plugin_basic_sample_registers_the_plugin_on_in_memory_runner(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.reply_function_call("hello_world", {"query": "hello world"})
    stub.reply_text("I printed hello world with your query.")
    run_example("plugin_basic_main")

    out = capsys.readouterr().out
    assert plugin_and_tool_lines(out) == [
        line for line in PLUGIN_DOC_OUTPUT if not line.startswith("** Got event from")
    ]
    assert output_lines(out).count("** Got event from hello_world") == 3
    assert [request["model"] for request in stub.requests] == ["gemini-2.0-flash"] * 2


def test_tool_logger_plugin_from_the_base_plugin_reference_logs_every_tool_call(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin_module = run_example("tool_logger_plugin", as_main=False)
    agent_module = run_example("plugin_basic_main", as_main=False)
    runner = InMemoryRunner(
        agent=agent_module["root_agent"], plugins=[plugin_module["ToolLoggerPlugin"]()]
    )
    stub.reply_function_call("hello_world", {"query": "hello world"})
    stub.reply_text("Done.")

    async def turn() -> list[Event]:
        await runner.session_service.create_session(
            app_name=runner.app_name, user_id="u", session_id="s"
        )
        return await one_turn(runner, "hello world", user_id="u", session_id="s")

    asyncio.run(turn())
    assert output_lines(capsys.readouterr().out) == [
        "[tool_logger] Calling tool 'hello_world' with args: {'query': 'hello world'}",
        "Hello world: query is [hello world]",
        "[tool_logger] Tool 'hello_world' finished with result: {'result': None}",
    ]


# --- Structured output ------------------------------------------------------------------------


def test_capital_agent_tool_output_key_and_output_schema(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.reply_function_call("get_capital_city", {"country": "France"})
    stub.reply_text("The capital of France is Paris.")
    stub.reply_function_call("get_capital_city", {"country": "Canada"})
    stub.reply_text("The capital of Canada is Ottawa.")
    stub.reply_text('{"capital": "Paris", "population_estimate": "2.1 million"}')
    stub.reply_text('{"capital": "Tokyo", "population_estimate": "14 million"}')
    namespace = run_example("structured_output")
    out = capsys.readouterr().out

    # Agent 1: the tool ran, and its final text went to state under output_key.
    assert "-- Tool Call: get_capital_city(country='France') --" in out
    assert "-- Tool Result: 'Paris' --" in out
    assert "<<< Agent 'capital_agent_tool' Response: The capital of France is Paris." in out
    assert "--- Session State ['capital_tool_result']: The capital of Canada is Ottawa." in out

    # Agent 2: the JSON answer is validated against the schema and stored as a dict.
    assert (
        """<<< Agent 'structured_info_agent_schema' Response: """
        """{"capital": "Tokyo", "population_estimate": "14 million"}""" in out
    )
    session = asyncio.run(
        namespace["session_service"].get_session(
            app_name="agent_comparison_app",
            user_id="test_user_456",
            session_id="session_schema_agent_xyz",
        )
    )
    assert session.state["structured_info_result"] == {
        "capital": "Tokyo",
        "population_estimate": "14 million",
    }
    # json.loads(dict) raises TypeError, so the example prints the stored dict as is.
    assert (
        "--- Session State ['structured_info_result']: "
        "{'capital': 'Tokyo', 'population_estimate': '14 million'}" in out
    )

    # The schema agent asked the model for JSON with the schema, and declared no tools.
    schema_request = stub.requests[4]["body"]
    config = schema_request["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config.get("responseSchema") or config.get("responseJsonSchema")
    assert set(schema["properties"]) == {"capital", "population_estimate"}
    assert "tools" not in schema_request
    assert "functionDeclarations" in json.dumps(stub.requests[0]["body"]["tools"])


# --- Planners ---------------------------------------------------------------------------------


def test_built_in_planner_example_sends_the_thinking_config_and_keeps_thoughts_apart(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    reply_parts(
        stub,
        {"text": "The user asks about New York; I should get its weather.", "thought": True},
        {"functionCall": {"name": "get_weather", "args": {"city": "New York"}}},
    )
    answer = "It is sunny in New York, 25 degrees Celsius (77 degrees Fahrenheit)."
    stub.reply_text(answer)
    namespace = run_example("planner_builtin")
    out = capsys.readouterr().out

    assert "BuiltInPlanner created." in out
    assert f"\n🟢 FINAL ANSWER\n {answer} \n" in out
    first = stub.requests[0]["body"]
    assert wire_keys(first["generationConfig"]["thinkingConfig"]) == {
        "includethoughts": True,
        "thinkingbudget": 256,
    }
    session = asyncio.run(
        namespace["session_service"].get_session(
            app_name="weather_app", user_id="1234", session_id="session1234"
        )
    )
    call_event = next(e for e in session.events if e.get_function_calls())
    thought, call = call_event.content.parts
    assert thought.thought is True
    assert call.function_call is not None
    assert call.function_call.name == "get_weather"
    assert not call.thought
    response_event = next(e for e in session.events if e.get_function_responses())
    (response,) = response_event.get_function_responses()
    assert response.response == namespace["get_weather"]("New York")
    final = session.events[-1]
    assert final.is_final_response()
    assert [(p.text, bool(p.thought)) for p in final.content.parts] == [(answer, False)]


def test_built_in_planner_snippet_keeps_the_thought_apart_from_the_answer(
    stub: GeminiStub,
) -> None:
    namespace = run_example("planner_builtin_snippet")
    reply_parts(
        stub,
        {"text": "A greeting needs no tools.", "thought": True},
        {"text": "Hello! How can I help?"},
    )
    runner = InMemoryRunner(agent=namespace["my_agent"])

    async def turn() -> list[Event]:
        await runner.session_service.create_session(
            app_name=runner.app_name, user_id="u", session_id="s"
        )
        return await one_turn(runner, "hi", user_id="u", session_id="s")

    events = asyncio.run(turn())
    assert wire_keys(stub.requests[0]["body"]["generationConfig"]["thinkingConfig"]) == {
        "includethoughts": True,
        "thinkingbudget": 1024,
    }
    final = events[-1]
    assert final.is_final_response()
    assert [(p.text, bool(p.thought)) for p in final.content.parts] == [  # type: ignore[union-attr]
        ("A greeting needs no tools.", True),
        ("Hello! How can I help?", False),
    ]


def test_plan_re_act_planner_snippet_marks_the_plan_as_thought(stub: GeminiStub) -> None:
    namespace = run_example("planner_react_snippet")
    stub.reply_text(
        "/*PLANNING*/\n1. Summarize recent AI news from what I know.\n\n"
        "/*FINAL_ANSWER*/\nHere's a summary of recent AI news: ..."
    )
    runner = InMemoryRunner(agent=namespace["my_agent"])

    async def turn() -> list[Event]:
        await runner.session_service.create_session(
            app_name=runner.app_name, user_id="u", session_id="s"
        )
        return await one_turn(runner, "ai news", user_id="u", session_id="s")

    events = asyncio.run(turn())
    instruction = system_text(stub.requests[0]["body"])
    assert "/*PLANNING*/" in instruction
    assert "/*FINAL_ANSWER*/" in instruction
    final = events[-1]
    assert final.is_final_response()
    assert final.content is not None
    parts = final.content.parts or []
    assert [bool(p.thought) for p in parts] == [True, False]
    thought, answer = (p.text or "" for p in parts)
    assert "1. Summarize recent AI news from what I know." in thought
    assert thought.rstrip().endswith("/*FINAL_ANSWER*/")
    assert answer.strip() == "Here's a summary of recent AI news: ..."


# --- Session state ----------------------------------------------------------------------------


def test_output_key_saves_the_final_text_to_state(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.reply_text("Hello there! How can I help you today?")
    run_example("state_output_key")

    assert output_lines(capsys.readouterr().out) == [
        "Initial state: {}",
        "Agent responded.",
        "State after agent run: {'last_greeting': 'Hello there! How can I help you today?'}",
    ]
    assert system_text(stub.requests[0]["body"]).startswith("Generate a short, friendly greeting.")


def test_state_delta_in_event_actions_updates_state_on_append_event(
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace = run_example("state_delta")
    out = capsys.readouterr().out

    assert "`append_event` called with explicit state delta." in out
    assert "Initial state: " in out
    updated = namespace["updated_session"]
    assert updated.state == {
        "task_status": "active",
        "user:login_count": 1,
        "user:last_login_ts": namespace["current_time"],
    }
    assert "temp:validation_needed" not in updated.state
    assert "temp:validation_needed" not in out.split("State after event:")[1]
    (event,) = updated.events
    assert event.author == "system"
    assert event.invocation_id == "inv_login_update"


def test_key_templating_injects_state_into_the_instruction(stub: GeminiStub) -> None:
    namespace = run_example("state_templating")
    stub.reply_text("Once upon a time, two cats became friends.")
    session_service = InMemorySessionService()
    runner = Runner(
        agent=namespace["story_generator"], app_name="story_app", session_service=session_service
    )

    async def turn() -> list[Event]:
        await session_service.create_session(
            app_name="story_app", user_id="u", session_id="s", state={"topic": "friendship"}
        )
        return await one_turn(runner, "Tell me a story.", user_id="u", session_id="s")

    events = asyncio.run(turn())
    instruction = system_text(stub.requests[0]["body"])
    assert "Write a short story about a cat, focusing on the theme: friendship." in instruction
    assert "{topic}" not in instruction
    assert events[-1].content.parts[0].text == "Once upon a time, two cats became friends."  # type: ignore[union-attr,index]


def test_instruction_provider_bypasses_state_injection(stub: GeminiStub) -> None:
    namespace = run_example("state_instruction_provider")
    stub.reply_text("Sure.")
    session_service = InMemorySessionService()
    runner = Runner(agent=namespace["agent"], app_name="tpl_app", session_service=session_service)

    async def turn() -> list[Event]:
        await session_service.create_session(app_name="tpl_app", user_id="u", session_id="s")
        return await one_turn(runner, "Help me with a template.", user_id="u", session_id="s")

    asyncio.run(turn())
    assert (
        "This is an instruction with {{literal_braces}} that will not be replaced."
        in system_text(stub.requests[0]["body"])
    )


# -- exact logs, inject_session_state, artifacts -----------------------------------------


def test_count_plugin_on_an_app_prints_exactly_the_documented_log(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    # ADK's run_async does not yield the user's message event: the page's log has no
    # "** Got event from user" line.
    stub.reply_function_call("hello_world", {"query": "hello world"})
    stub.reply_text("I printed hello world with your query.")
    run_example("plugins_app")
    assert output_lines(capsys.readouterr().out) == PLUGIN_DOC_OUTPUT


def test_plugin_basic_sample_prints_exactly_the_documented_log(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.reply_function_call("hello_world", {"query": "hello world"})
    stub.reply_text("I printed hello world with your query.")
    run_example("plugin_basic_main")
    assert output_lines(capsys.readouterr().out) == PLUGIN_DOC_OUTPUT


def test_inject_session_state_fills_state_in_an_instruction_provider(stub: GeminiStub) -> None:
    namespace = run_example("state_inject_session_state")
    stub.reply_text("Sure.")
    session_service = InMemorySessionService()
    runner = Runner(agent=namespace["agent"], app_name="tpl_app", session_service=session_service)

    async def turn() -> list[Event]:
        await session_service.create_session(
            app_name="tpl_app",
            user_id="u",
            session_id="s",
            # ADK's inject_session_state also reads `{{literal_braces}}` as state key
            # `literal_braces` (KeyError when absent), so the state provides it.
            state={"adjective": "dynamic", "literal_braces": "{{literal_braces}}"},
        )
        return await one_turn(runner, "Help me with a template.", user_id="u", session_id="s")

    asyncio.run(turn())
    assert "This is a dynamic instruction with {{literal_braces}}." in system_text(
        stub.requests[0]["body"]
    )


# --- Artifacts --------------------------------------------------------------------------------

REPORT = b"%PDF-1.4 generated report"


def test_artifacts_saved_loaded_and_listed_through_the_tool_context(
    stub: GeminiStub, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = run_example("artifacts")
    artifact_service = namespace["artifact_service"]

    # The page's save/load functions take "a context obtained from a callback or tool": these
    # tools hand them the ToolContext; list_user_files_py is a tool as the page has it.
    async def generate_report(tool_context: ToolContext) -> str:
        """Generates the PDF report and saves it as an artifact."""
        await namespace["save_generated_report_py"](tool_context, REPORT)
        return "saved"

    async def read_report(tool_context: ToolContext) -> str:
        """Loads the latest report and reads it."""
        await namespace["process_latest_report_py"](tool_context)
        return "read"

    agent = LlmAgent(
        name="report_agent",
        model="gemini-flash-latest",
        tools=[generate_report, read_report, namespace["list_user_files_py"]],
    )
    # The page's Runner bound its session service to the artifact service (agentd records an
    # artifact version with the event that commits it); this runner shares both.
    session_service = namespace["runner"].session_service
    runner = Runner(
        agent=agent,
        app_name="artifact_app",
        session_service=session_service,
        artifact_service=artifact_service,
    )
    stub.reply_function_call("generate_report")
    stub.reply_function_call("generate_report")
    stub.reply_function_call("read_report")
    stub.reply_function_call("list_user_files_py")
    stub.reply_text("Your report is saved (two versions).")

    async def turn() -> tuple[list[Event], list[int]]:
        await session_service.create_session(app_name="artifact_app", user_id="u", session_id="s")
        events = await one_turn(
            runner, "Make my report twice, then read it.", user_id="u", session_id="s"
        )
        versions = await artifact_service.list_versions(
            app_name="artifact_app", user_id="u", session_id="s", filename="generated_report.pdf"
        )
        return events, versions

    events, versions = asyncio.run(turn())
    assert output_lines(capsys.readouterr().out) == [
        "Successfully saved Python artifact 'generated_report.pdf' as version 0.",
        "Successfully saved Python artifact 'generated_report.pdf' as version 1.",
        "Successfully loaded latest Python artifact 'generated_report.pdf'.",
        "MIME Type: application/pdf",
        f"Report size: {len(REPORT)} bytes.",
    ]
    assert versions == [0, 1]
    deltas = [e.actions.artifact_delta for e in events if e.actions.artifact_delta]
    assert deltas == [{"generated_report.pdf": 0}, {"generated_report.pdf": 1}]
    listed = [
        r.response
        for e in events
        for r in e.get_function_responses()
        if r.name == "list_user_files_py"
    ]
    assert listed == [
        {"result": "Here are your available Python artifacts:\n- generated_report.pdf"}
    ]
    assert events[-1].content.parts[0].text == "Your report is saved (two versions)."  # type: ignore[union-attr,index]


def test_logging_plugin_on_an_app_logs_the_invocations_activity(
    stub: GeminiStub, caplog: pytest.LogCaptureFixture
) -> None:
    # agentd's LoggingPlugin writes to Python logging instead of print() (README, Differences).
    agent_module = run_example("plugin_basic_main", as_main=False)
    namespace = run_example("logging_plugin_app", root_agent=agent_module["root_agent"])
    runner = InMemoryRunner(app=namespace["app"])
    stub.reply_function_call("hello_world", {"query": "hello world"})
    stub.reply_text("Done.")

    async def turn() -> list[Event]:
        await runner.session_service.create_session(app_name="my_app", user_id="u", session_id="s")
        return await one_turn(runner, "hello world", user_id="u", session_id="s")

    with caplog.at_level("INFO", logger="app.plugins.logging_plugin"):
        events = asyncio.run(turn())

    logged = " ".join(r.getMessage() for r in caplog.records)
    for hook in (
        "user message",
        "run start",
        "agent start",
        "model request",
        "tool call",
        "tool result",
        "event",
        "run end",
    ):
        assert f"[logging_plugin] {hook}:" in logged, hook
    assert "hello_world" in logged
    assert events[-1].content is not None


def test_a_plugin_returning_a_dict_from_before_tool_callback_skips_the_tool(
    stub: GeminiStub,
) -> None:
    namespace = run_example("tool_guard_plugin", as_main=False)
    runner = namespace["runner"]
    stub.reply_function_call("delete_records", {"table": "users"})
    stub.reply_text("I am not allowed to delete them.")

    async def turn() -> list[Event]:
        await runner.session_service.create_session(
            app_name="records_app", user_id="u", session_id="s"
        )
        return await one_turn(runner, "delete all users", user_id="u", session_id="s")

    events = asyncio.run(turn())

    assert namespace["deleted"] == []  # the tool never ran
    assert namespace["guard"].blocked == 1
    (response,) = [r for e in events for r in e.get_function_responses()]
    assert response.response == {"error": "delete_records is not allowed."}
    # The model got the plugin's result in place of the tool's.
    sent = stub.requests[1]["body"]["contents"]
    assert any(
        p.get("functionResponse", {}).get("response") == {"error": "delete_records is not allowed."}
        for c in sent
        for p in c["parts"]
    )
