"""MCPToolset through /run on a real server process (issue 20, acceptance 1-3), and the
shipped `notes_agent` example.

The test apps take their tools from tests/tools/mcp_test_server.py over stdio; the server
writes its pid under the gates folder, so the test can count the MCP server processes left once
agentd has shut down.
"""

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, gated_app_env
from tests.tools.mcp_servers import alive, calls, http_server, server_pids


def _run(http: httpx.Client, app: str, text: str) -> list[dict[str, Any]]:
    http.post(f"/apps/{app}/users/u/sessions", json={"sessionId": "s"})
    response = http.post(
        "/run",
        json={
            "appName": app,
            "userId": "u",
            "sessionId": "s",
            "newMessage": {"role": "user", "parts": [{"text": text}]},
        },
    )
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()
    return events


def _parts(events: list[dict[str, Any]], kind: str) -> list[Any]:
    return [
        p[kind] for e in events for p in (e.get("content") or {}).get("parts") or [] if kind in p
    ]


def _agentd(tmp_path: Path, gates: Path, **settings: str) -> LiveServer:
    return LiveServer(tmp_path / "a", {**gated_app_env(tmp_path, gates), **settings}).start()


def test_mcp_tools_through_run_and_no_server_outlives_agentd(tmp_path: Path) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    server = _agentd(tmp_path, gates)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            events = _run(http, "mcp_test_agent", "both")
            assert [c["name"] for c in _parts(events, "functionCall")] == ["add", "shout"]
            assert [r["response"] for r in _parts(events, "functionResponse")] == [
                {"result": 5},
                {"result": "SUM IS 5!"},
            ]
            assert _parts(events, "text")[-1] == "SUM IS 5!"  # the answers reached the model

            filtered = _run(http, "mcp_filtered_agent", "which tools?")
            assert _parts(filtered, "text") == ["tools: shout"]

            notes = _run(http, "notes_agent", "note: buy milk")
            assert _parts(notes, "text")[-1] == "noted (1 notes)"
            listed = _run(http, "notes_agent", "my notes")
            assert _parts(listed, "text")[-1] == "your notes: ['buy milk']"
        assert len(alive(server_pids(gates))) == 2  # one session per toolset, still open
    finally:
        server.stop()
    # Shut down gracefully (uvicorn then re-raises the SIGTERM it handled), having closed its
    # toolsets: no MCP server process is left.
    assert "Application shutdown complete" in server.log.read_text()
    assert alive(server_pids(gates)) == []
    assert os.path.exists(tmp_path / "data" / "notes.json")


def test_a_killed_mcp_server_is_a_tool_error_then_the_next_call_works(tmp_path: Path) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    server = _agentd(tmp_path, gates)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            _run(http, "mcp_test_agent", "both")  # the session (and its server) is up
            (first,) = alive(server_pids(gates))
            killer = threading.Thread(target=_kill_when_snoozing, args=(gates, first))
            killer.start()
            events = _run(http, "mcp_test_agent", "sleep")
            killer.join()
            (answer,) = _parts(events, "functionResponse")
            assert answer["name"] == "snooze"
            assert answer["response"]["error"]["type"] == "mcp-tool-failed"

            again = _run(http, "mcp_test_agent", "both")
            assert _parts(again, "text")[-1] == "SUM IS 5!"
            (second,) = alive(server_pids(gates))
            assert second != first  # the session was reopened with a new server
    finally:
        server.stop()
    assert alive(server_pids(gates)) == []


def _kill_when_snoozing(gates: Path, pid: int) -> None:
    deadline = time.monotonic() + 30
    while not any(c.get("event") == "start" for c in calls(gates)):
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture
def mcp_http_server(tmp_path: Path) -> Iterator[str]:
    """The test MCP server over streamable HTTP; its URL."""
    gates = tmp_path / "gates"
    gates.mkdir(exist_ok=True)
    with http_server(gates) as url:
        yield url


def test_streamable_http_tools_carry_each_users_headers(
    tmp_path: Path, mcp_http_server: str
) -> None:
    gates = tmp_path / "gates"
    server = _agentd(tmp_path, gates, MCP_TEST_URL=mcp_http_server)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            for user in ("alice", "bob"):
                http.post(f"/apps/mcp_http_agent/users/{user}/sessions", json={"sessionId": "s"})
                response = http.post(
                    "/run",
                    json={
                        "appName": "mcp_http_agent",
                        "userId": user,
                        "sessionId": "s",
                        "newMessage": {"role": "user", "parts": [{"text": "both"}]},
                    },
                )
                assert response.status_code == 200, response.text
                assert _parts(response.json(), "text")[-1] == f"you are {user}"
    finally:
        server.stop()
    assert [c["user"] for c in calls(gates) if c["tool"] == "whoami"] == ["alice", "bob"]
