"""agentd as an MCP server, over real HTTP to a real server process, with the `mcp` SDK's client.

One server (AGENTD_AUTH=api_key, the shipped offline `capital_agent`) serves the module; its keys
are made with `agentd keys create` before it starts: one bound to no user (it acts as the user
`key:<id>`), two bound to users, one bound to another app.
"""

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from tests.live_server import LiveServer, build_agents_dir

APP = "capital_agent"
FRANCE = "What is the capital of France?"
JAPAN = "What is the capital of Japan?"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


@dataclass
class Agentd:
    """The running server and its keys."""

    server: LiveServer
    service_key: str  # bound to no user
    service_user: str  # the user the service key acts as: `key:<id>`
    alice_key: str
    bob_key: str
    refund_only_key: str  # bound to the app refund_agent

    def mcp_url(self, app: str = APP) -> str:
        """The MCP endpoint of `app`."""
        return f"{self.server.url}/apps/{app}/mcp"

    def rest(self, key: str) -> httpx.Client:
        """A REST client with `key`."""
        return httpx.Client(
            base_url=self.server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        )


def _agentd(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "app", *args],
        env={**os.environ, **env},
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def agentd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agentd]:
    """One api_key server with its keys."""
    root = tmp_path_factory.mktemp("mcp")
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_AUTH": "api_key",
    }
    _agentd(env, root, "migrate")
    service_key = _agentd(env, root, "keys", "create", "--name", "t")
    alice_key = _agentd(env, root, "keys", "create", "--name", "alice", "--user", "alice")
    bob_key = _agentd(env, root, "keys", "create", "--name", "bob", "--user", "bob")
    refund_only = _agentd(env, root, "keys", "create", "--name", "r", "--app", "refund_agent")
    # A key reads `agentd_<id>_<secret>`.
    service_user = "key:" + service_key.split("_")[1]
    server = LiveServer(root / "server", env).start()
    try:
        yield Agentd(server, service_key, service_user, alice_key, bob_key, refund_only)
    finally:
        server.stop()


@asynccontextmanager
async def mcp_session(
    url: str, key: str | None, statuses: list[int] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session (the SDK's streamable HTTP client) with `key`."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(30), event_hooks={"response": [record]}
        ) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _run(session: ClientSession, arguments: dict[str, Any]) -> CallToolResult:
    result = await session.call_tool("run", arguments)
    assert isinstance(result, CallToolResult)
    return result


def _problem(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    problem: dict[str, Any] = json.loads(block.text)
    return problem


def _texts(session: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (event["author"], part["text"])
        for event in session["events"]
        for part in (event.get("content") or {}).get("parts", [])
        if "text" in part
    ]


def test_the_endpoint_answers_401_problem_without_a_valid_key(agentd: Agentd) -> None:
    for headers in ({}, {"Authorization": "Bearer agentd_nope_nope"}, {"X-API-Key": "wrong"}):
        response = httpx.post(
            agentd.mcp_url(), json=INITIALIZE, headers={**MCP_ACCEPT, **headers}, timeout=30
        )
        assert response.status_code == 401
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["www-authenticate"] == 'Bearer realm="agentd"'
        # The same problem as every other route's 401.
        rest = httpx.get(f"{agentd.server.url}/list-apps", headers=headers, timeout=30)
        assert response.json()["type"] == rest.json()["type"] == "unauthenticated"


async def test_an_mcp_client_without_a_valid_key_cannot_initialize(agentd: Agentd) -> None:
    for key in (None, "agentd_nope_nope"):
        statuses: list[int] = []
        # The SDK's task groups wrap the initialize error.
        with pytest.raises(BaseExceptionGroup) as refused:
            async with mcp_session(agentd.mcp_url(), key, statuses):
                pass
        assert refused.group_contains(MCPError, match="error response")
        assert statuses == [401]


async def test_a_client_lists_run_and_a_second_call_continues_the_session(agentd: Agentd) -> None:
    async with mcp_session(agentd.mcp_url(), agentd.service_key) as session:
        tools = (await session.list_tools()).tools
        assert [tool.name for tool in tools] == ["run"]
        (run,) = tools
        assert run.description == "Answers questions about capital cities."
        assert run.input_schema["type"] == "object"
        assert run.input_schema["required"] == ["message"]
        assert {name: spec["type"] for name, spec in run.input_schema["properties"].items()} == {
            "message": "string",
            "sessionId": "string",
        }
        assert run.output_schema is not None
        assert run.output_schema["required"] == ["text", "sessionId"]

        first = await _run(session, {"message": FRANCE})
        assert not first.is_error
        assert isinstance(first.structured_content, dict)
        assert first.structured_content["text"] == "The capital of France is Paris."
        assert first.content == [TextContent(text="The capital of France is Paris.")]
        session_id = first.structured_content["sessionId"]

        second = await _run(session, {"message": JAPAN, "sessionId": session_id})
        assert second.structured_content == {
            "text": "The capital of Japan is Tokyo.",
            "sessionId": session_id,
        }

    # An unbound key acts as the user named by its id; the session has both turns.
    with agentd.rest(agentd.service_key) as rest:
        response = rest.get(f"/apps/{APP}/users/{agentd.service_user}/sessions/{session_id}")
        assert response.status_code == 200
        assert _texts(response.json()) == [
            ("user", FRANCE),
            (APP, "The capital of France is Paris."),
            ("user", JAPAN),
            (APP, "The capital of Japan is Tokyo."),
        ]


async def test_a_user_bound_key_acts_as_its_user_and_cannot_continue_another_users_session(
    agentd: Agentd,
) -> None:
    async with mcp_session(agentd.mcp_url(), agentd.alice_key) as alice:
        first = await _run(alice, {"message": FRANCE})
        assert isinstance(first.structured_content, dict)
        session_id = first.structured_content["sessionId"]

    async with mcp_session(agentd.mcp_url(), agentd.bob_key) as bob:
        refused = await _run(bob, {"message": JAPAN, "sessionId": session_id})
        problem = _problem(refused)
        assert problem["type"] == "session-not-found"
        assert problem["sessionId"] == session_id

    with agentd.rest(agentd.alice_key) as rest:
        session = rest.get(f"/apps/{APP}/users/alice/sessions/{session_id}").json()
        assert _texts(session) == [("user", FRANCE), (APP, "The capital of France is Paris.")]
    with agentd.rest(agentd.bob_key) as rest:
        assert rest.get(f"/apps/{APP}/users/bob/sessions/{session_id}").status_code == 404


async def test_bad_arguments_and_an_unknown_session_are_tool_errors(agentd: Agentd) -> None:
    async with mcp_session(agentd.mcp_url(), agentd.alice_key) as session:
        assert _problem(await _run(session, {}))["type"] == "invalid-request"
        bad_id = await _run(session, {"message": FRANCE, "sessionId": "../x"})
        assert _problem(bad_id)["type"] == "invalid-request"
        missing = await _run(session, {"message": FRANCE, "sessionId": "no-such-session"})
        assert _problem(missing)["type"] == "session-not-found"
        # The connection is still usable after tool errors.
        assert not (await _run(session, {"message": FRANCE})).is_error


async def test_a_turn_that_waits_for_a_confirmation_is_a_tool_error_naming_the_invocation(
    agentd: Agentd,
) -> None:
    async with mcp_session(agentd.mcp_url("refund_agent"), agentd.alice_key) as session:
        waiting = await _run(session, {"message": "refund 150 for order A1"})
    problem = _problem(waiting)
    assert problem["type"] == "session-requires-action"
    with agentd.rest(agentd.alice_key) as rest:
        invocation = rest.get(
            f"/apps/refund_agent/users/alice/sessions/{problem['sessionId']}"
            f"/invocations/{problem['invocationId']}"
        ).json()
    assert invocation["status"] == "requires_action"


def test_an_unknown_app_or_one_the_key_may_not_use_is_404(agentd: Agentd) -> None:
    for app, key in (("no_such_app", agentd.service_key), (APP, agentd.refund_only_key)):
        response = httpx.post(
            agentd.mcp_url(app),
            json=INITIALIZE,
            headers={**MCP_ACCEPT, "Authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["type"] == "app-not-found"


async def test_the_sdks_default_client_negotiating_the_protocol_calls_run(agentd: Agentd) -> None:
    headers = {"Authorization": f"Bearer {agentd.alice_key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
        async with Client(streamable_http_client(agentd.mcp_url(), http_client=http)) as client:
            result = await client.call_tool("run", {"message": JAPAN})
    assert isinstance(result, CallToolResult)
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["text"] == "The capital of Japan is Tokyo."


async def test_without_authentication_a_call_acts_as_the_anonymous_user(tmp_path: Path) -> None:
    env = {
        "AGENTD_DATA_DIR": str(tmp_path / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(tmp_path / "agents")),
        "AGENTD_AUTH": "none",
    }
    server = LiveServer(tmp_path / "server", env).start()
    try:
        async with mcp_session(f"{server.url}/apps/{APP}/mcp", None) as session:
            result = await _run(session, {"message": FRANCE})
        assert isinstance(result.structured_content, dict)
        session_id = result.structured_content["sessionId"]
        response = httpx.get(
            f"{server.url}/apps/{APP}/users/anonymous/sessions/{session_id}", timeout=30
        )
        assert response.status_code == 200
    finally:
        server.stop()
