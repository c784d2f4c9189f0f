"""MCPToolset through /run on a real server process (issue 20, acceptance 1 and 3), and the
shipped `notes_agent` example.

The test apps take their tools from tests/tools/mcp_test_server.py over stdio; the server
writes its pid under the gates folder, so the test can count the MCP server processes left once
agentd has shut down.
"""

import os
from pathlib import Path
from typing import Any

import httpx

from tests.live_server import LiveServer, build_agents_dir


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "State:\tZ" not in status.read_text():
            alive.append(pid)
    return alive


def _server_pids(gates: Path) -> list[int]:
    return [int(p.read_text()) for p in gates.glob("server-*.pid")]


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


def test_mcp_tools_through_run_and_no_server_outlives_agentd(tmp_path: Path) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    server = LiveServer(
        tmp_path / "a",
        {
            "AGENTD_DATA_DIR": str(tmp_path / "data"),
            "AGENTD_AGENTS_DIR": str(build_agents_dir(tmp_path / "agents")),
            "AGENTD_TEST_GATES": str(gates),
        },
    ).start()
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
        assert len(_alive(_server_pids(gates))) == 2  # one session per toolset, still open
    finally:
        server.stop()
    # Shut down gracefully (uvicorn then re-raises the SIGTERM it handled), having closed its
    # toolsets: no MCP server process is left.
    assert "Application shutdown complete" in server.log.read_text()
    assert _alive(_server_pids(gates)) == []
    assert os.path.exists(tmp_path / "data" / "notes.json")
