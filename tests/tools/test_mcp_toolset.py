"""MCPToolset against a real MCP server written with the `mcp` SDK (tests/tools/
mcp_test_server.py), over stdio and streamable HTTP, driven by a scripted model (issue 20,
acceptance 1-3 below HTTP; tests/api/test_mcp_toolset_http.py goes through /run)."""

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agents import LlmAgent
from app.contexts.readonly import ReadonlyContext
from app.errors import McpToolFailed
from app.runners import InMemoryRunner
from app.sessions.models import Event
from app.tools.mcp_tool import (
    MCPToolset,
    SseConnectionParams,
    StdioConnectionParams,
    StdioServerParameters,
    StreamableHTTPConnectionParams,
)
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response
from tests.tools.mcp_servers import SERVER, alive, calls, http_server, server_pids


def _stdio(directory: Path) -> StdioConnectionParams:
    return StdioConnectionParams(
        server_params=StdioServerParameters(
            command=sys.executable,
            args=[str(SERVER), "stdio"],
            env={"MCP_TEST_DIR": str(directory)},
        ),
        timeout=30,
    )


def _responses(events: list[Event]) -> list[tuple[str | None, Any]]:
    return [(r.name, r.response) for e in events for r in e.get_function_responses()]


async def _turn(agent: LlmAgent, text: str = "go") -> tuple[InMemoryRunner, list[Event]]:
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner, await run_turn(runner, text)


@pytest.fixture
async def stdio_toolset(tmp_path: Path) -> AsyncIterator[MCPToolset]:
    toolset = MCPToolset(connection_params=_stdio(tmp_path))
    try:
        yield toolset
    finally:
        await toolset.close()


async def test_two_tools_over_stdio_and_their_answers_reach_the_model(
    tmp_path: Path, stdio_toolset: MCPToolset
) -> None:
    model = ScriptModel(
        replies=[
            calls_response(("add", {"a": 2, "b": 3}), ("shout", {"text": "hi"})),
            text_response("done"),
        ]
    )
    _, events = await _turn(LlmAgent(name="a", model=model, tools=[stdio_toolset]))

    declared = model.requests[0].tools_dict
    assert {"add", "shout", "whoami", "snooze", "picture", "fail"} <= set(declared)
    declaration = declared["add"].get_declaration()
    assert declaration.parameters_json_schema["required"] == ["a", "b"]
    assert _responses(events) == [("add", {"result": 5}), ("shout", {"result": "HI!"})]
    seen = [
        (p.function_response.name, p.function_response.response)
        for c in model.requests[1].contents
        for p in c.parts or []
        if p.function_response
    ]
    assert seen == [("add", {"result": 5}), ("shout", {"result": "HI!"})]
    # The two calls run concurrently: the server sees them in either order (the answers above
    # keep the model's order).
    assert sorted(c["tool"] for c in calls(tmp_path)) == ["add", "shout"]


async def test_a_tool_filter_hides_the_other_tools(tmp_path: Path) -> None:
    filtered = MCPToolset(connection_params=_stdio(tmp_path), tool_filter=["shout"])
    try:
        model = ScriptModel(replies=[text_response("ok")])
        await _turn(LlmAgent(name="a", model=model, tools=[filtered]))
        assert list(model.requests[0].tools_dict) == ["shout"]
    finally:
        await filtered.close()


async def test_an_error_result_and_an_image(stdio_toolset: MCPToolset) -> None:
    model = ScriptModel(
        replies=[calls_response(("fail", {}), ("picture", {})), text_response("seen")]
    )
    runner, events = await _turn(LlmAgent(name="a", model=model, tools=[stdio_toolset]))

    (fail, picture) = _responses(events)
    assert fail[1]["error"]["type"] == "mcp-tool-failed"
    assert "always fails" in fail[1]["error"]["detail"]
    (saved,) = picture[1]["artifacts"]
    assert saved["mimeType"] == "image/png"
    assert runner.artifact_service is not None
    artifact = await runner.artifact_service.load_artifact(
        app_name="app", user_id="u", session_id="s", filename=saved["artifact"]
    )
    assert artifact is not None
    assert artifact.inline_data is not None
    assert (artifact.inline_data.data or b"").startswith(b"\x89PNG")


async def _snoozing(
    agent: LlmAgent, directory: Path
) -> tuple[InMemoryRunner, "asyncio.Task[list[Event]]"]:
    """A turn whose model called `snooze`, once the server has started it."""
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    turn = asyncio.create_task(run_turn(runner, "sleep"))
    for _ in range(600):
        if any(c.get("event") == "start" for c in calls(directory)):
            break
        await asyncio.sleep(0.05)
    return runner, turn


async def test_a_killed_server_gives_a_typed_error_then_the_next_call_works(
    tmp_path: Path, stdio_toolset: MCPToolset
) -> None:
    model = ScriptModel(
        replies=[calls_response(("snooze", {"seconds": 30})), text_response("after")]
    )
    runner, turn = await _snoozing(LlmAgent(name="a", model=model, tools=[stdio_toolset]), tmp_path)
    (first,) = alive(server_pids(tmp_path))
    os.kill(first, signal.SIGKILL)
    events = await asyncio.wait_for(turn, 30)

    ((name, response),) = _responses(events)
    assert name == "snooze"
    assert response["error"]["type"] == "mcp-tool-failed"

    model.replies[:] = [calls_response(("add", {"a": 1, "b": 1})), text_response("two")]
    model.requests.clear()
    again = await run_turn(runner, "add")
    assert _responses(again) == [("add", {"result": 2})]
    (second,) = alive(server_pids(tmp_path))
    assert second != first  # a new session, a new server

    await stdio_toolset.close()
    for _ in range(100):
        if not alive(server_pids(tmp_path)):
            break
        await asyncio.sleep(0.05)
    assert alive(server_pids(tmp_path)) == []


async def test_cancelling_the_invocation_cancels_the_call_on_the_server(
    tmp_path: Path, stdio_toolset: MCPToolset
) -> None:
    model = ScriptModel(replies=[calls_response(("snooze", {"seconds": 30}))])
    _, turn = await _snoozing(LlmAgent(name="a", model=model, tools=[stdio_toolset]), tmp_path)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    for _ in range(100):
        if any(c.get("event") == "cancelled" for c in calls(tmp_path)):
            break
        await asyncio.sleep(0.05)
    assert [c.get("event") for c in calls(tmp_path) if c["tool"] == "snooze"] == [
        "start",
        "cancelled",
    ]


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    with http_server(tmp_path) as url:
        yield url


async def test_streamable_http_with_per_user_headers(tmp_path: Path, http_url: str) -> None:
    def headers(context: ReadonlyContext) -> dict[str, str]:
        return {"X-User": context.user_id}

    toolset = MCPToolset(
        connection_params=StreamableHTTPConnectionParams(url=http_url, timeout=30),
        header_provider=headers,
    )
    try:
        model = ScriptModel(
            replies=[calls_response(("whoami", {}), ("add", {"a": 4, "b": 5})), text_response("k")]
        )
        _, events = await _turn(LlmAgent(name="a", model=model, tools=[toolset]))
        assert _responses(events) == [("whoami", {"result": "u"}), ("add", {"result": 9})]
        assert [c.get("user") for c in calls(tmp_path) if c["tool"] == "whoami"] == ["u"]
    finally:
        await toolset.close()


async def test_the_older_sse_transport(tmp_path: Path) -> None:
    with http_server(tmp_path, "sse") as url:
        toolset = MCPToolset(connection_params=SseConnectionParams(url=url, timeout=30))
        try:
            model = ScriptModel(
                replies=[calls_response(("add", {"a": 20, "b": 22})), text_response("42")]
            )
            _, events = await _turn(LlmAgent(name="a", model=model, tools=[toolset]))
            assert _responses(events) == [("add", {"result": 42})]
        finally:
            await toolset.close()


async def test_bare_stdio_server_parameters_serve_the_tools_as_in_adk(tmp_path: Path) -> None:
    toolset = MCPToolset(connection_params=_stdio(tmp_path).server_params, tool_filter=["add"])
    try:
        model = ScriptModel(replies=[calls_response(("add", {"a": 1, "b": 2})), text_response("3")])
        _, events = await _turn(LlmAgent(name="a", model=model, tools=[toolset]))
        assert _responses(events) == [("add", {"result": 3})]
    finally:
        await toolset.close()


async def test_a_call_past_its_timeout_is_a_tool_error(tmp_path: Path) -> None:
    toolset = MCPToolset(connection_params=_stdio(tmp_path), timeout_seconds=0.5)
    try:
        model = ScriptModel(
            replies=[calls_response(("snooze", {"seconds": 5})), text_response("gave up")]
        )
        _, events = await _turn(LlmAgent(name="a", model=model, tools=[toolset]))
        ((name, response),) = _responses(events)
        assert name == "snooze"
        assert response["error"]["type"] == "mcp-tool-failed"
    finally:
        await toolset.close()


async def test_an_mcp_error_reaches_on_tool_error_callback_which_may_answer(
    stdio_toolset: MCPToolset,
) -> None:
    seen: list[Exception] = []

    def on_error(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> Any:
        del tool, args, tool_context
        seen.append(error)
        return {"fallback": "the tool failed, use this instead"}

    model = ScriptModel(replies=[calls_response(("fail", {})), text_response("ok")])
    agent = LlmAgent(name="a", model=model, tools=[stdio_toolset], on_tool_error_callback=on_error)
    _, events = await _turn(agent)

    (error,) = seen
    assert isinstance(error, McpToolFailed)
    assert error.marshal()["type"] == "mcp-tool-failed"
    assert _responses(events) == [("fail", {"fallback": "the tool failed, use this instead"})]
