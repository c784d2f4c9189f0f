"""Invocations as server-owned resources, over real HTTP to agentd server processes.

The `gated_agent` test app's tool waits until the test creates `<gates>/<session>.open`, so a
test can hold an invocation in flight while it disconnects, competes, cancels or kills.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_pg_url
from tests.live_server import LiveServer, gated_app_env, iter_sse, wait_until
from tests.pgserver import PostgresServer

APP = "/apps/gated_agent/users/u1/sessions"
MESSAGE = {"role": "user", "parts": [{"text": "go"}]}


class Env:
    """Paths and settings shared by the server processes of one test."""

    def __init__(self, root: Path, database_url: str | None) -> None:
        self.root = root
        self.gates = root / "gates"
        self.vars = {
            **gated_app_env(root, self.gates, database_url),
            "AGENTD_LEASE_SECONDS": "1",
            "AGENTD_ENQUEUE_TIMEOUT_SECONDS": "60",
        }

    def server(self, name: str) -> LiveServer:
        """A new (not yet started) server process on this environment."""
        return LiveServer(self.root / name, self.vars)

    def open_gate(self, session_id: str) -> None:
        """Let the session's waiting tool finish."""
        (self.gates / f"{session_id}.open").touch()


@pytest.fixture
def env(tmp_path: Path) -> Env:
    """SQLite environment."""
    return Env(tmp_path, None)


@pytest.fixture
def server(env: Env) -> Iterator[LiveServer]:
    """One running server."""
    live = env.server("a").start()
    yield live
    live.stop()


def _create_session(http: httpx.Client, sid: str) -> None:
    assert http.post(APP, json={"sessionId": sid}).status_code == 201


def _events(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = http.get(
        f"{APP}/{sid}/events", params={"pageSize": 1000}
    ).json()["events"]
    return events


def _invocation(http: httpx.Client, sid: str, iid: str) -> dict[str, Any]:
    body: dict[str, Any] = http.get(f"{APP}/{sid}/invocations/{iid}").json()
    return body


def _start(http: httpx.Client, sid: str, **fields: Any) -> httpx.Response:
    return http.post(
        f"{APP}/{sid}/invocations", json={"newMessage": MESSAGE, "mode": "background", **fields}
    )


def test_disconnected_stream_keeps_running_and_resumes_after_last_event_id(
    env: Env, server: LiveServer
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        _create_session(http, "s")
        body = {"newMessage": MESSAGE, "mode": "stream"}
        with http.stream("POST", f"{APP}/s/invocations", json=body) as response:
            assert response.status_code == 200
            iid = response.headers["x-invocation-id"]
            first = next(f for f in iter_sse(response.iter_lines()) if f.event == "event")
        # The client is gone after the first event; the run is not.
        assert first.id == "1"
        wait_until(lambda: len(_events(http, "s")) >= 2)  # the model's call is persisted
        assert _invocation(http, "s", iid)["status"] == "running"

        headers = {"Last-Event-ID": first.id}
        with http.stream("GET", f"{APP}/s/invocations/{iid}/events", headers=headers) as resumed:
            frames = iter_sse(resumed.iter_lines())
            replayed = next(frames)
            env.open_gate("s")  # the rest happens live, after the reconnect
            rest = list(frames)
        received = [replayed, *rest]
        ids = [f.id for f in received if f.event == "event"]
        assert ids == ["2", "3", "4"]
        assert received[-1].event == "done"
        assert json.loads(received[-1].data)["status"] == "completed"
        stored = _events(http, "s")
        assert [e["seq"] for e in stored] == [1, 2, 3, 4]
        assert stored[-1]["content"]["parts"][0]["text"] == "gate opened"


def test_reject_answers_session_busy_while_a_run_holds_the_session(
    env: Env, server: LiveServer
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        _create_session(http, "s")
        first = _start(http, "s")
        assert first.status_code == 202
        busy = _start(http, "s", multitaskStrategy="reject")
        assert busy.status_code == 409
        assert busy.headers["content-type"].startswith("application/problem+json")
        assert busy.json()["type"] == "session-busy"
        env.open_gate("s")
        iid = first.json()["id"]
        wait_until(lambda: _invocation(http, "s", iid)["status"] == "completed")
        listed = http.get(f"{APP}/s/invocations").json()["invocations"]
        assert [i["id"] for i in listed] == [iid]  # the rejected request left nothing behind


def test_idempotency_key_replays_the_first_invocation_without_running_twice(
    env: Env, server: LiveServer
) -> None:
    env.open_gate("s")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        _create_session(http, "s")
        headers = {"Idempotency-Key": "order-42"}
        body = {"newMessage": MESSAGE, "mode": "wait"}
        first = http.post(f"{APP}/s/invocations", json=body, headers=headers)
        assert first.status_code == 200, first.text
        again = http.post(f"{APP}/s/invocations", json=body, headers=headers)
        assert again.status_code == 200
        assert again.json()["invocation"]["id"] == first.json()["invocation"]["id"]
        assert again.json()["events"] == first.json()["events"]
        assert [e["author"] for e in _events(http, "s")].count("user") == 1
        state = http.get(f"{APP}/s").json()["state"]
        assert state["gate_passes"] == 1
        other_body = {"newMessage": {"role": "user", "parts": [{"text": "else"}]}, "mode": "wait"}
        reused = http.post(f"{APP}/s/invocations", json=other_body, headers=headers)
        assert reused.status_code == 422
        assert reused.json()["type"] == "idempotency-key-reused"


def test_cancel_stops_a_waiting_tool_and_the_session_stays_usable(
    env: Env, server: LiveServer
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        _create_session(http, "s")
        iid = _start(http, "s").json()["id"]
        wait_until(lambda: len(_events(http, "s")) >= 2)  # the tool is now waiting
        cancelled = http.post(f"{APP}/s/invocations/{iid}/cancel")
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] == "cancelled"
        assert cancelled.json()["error"]["type"] == "invocation-cancelled"
        events = _events(http, "s")
        # The user's message, the model's call, and the call answered with the cancellation
        # (in the transaction that recorded it): nothing half-done, no call left open.
        assert [(e["author"], "functionCall" in json.dumps(e)) for e in events] == [
            ("user", False),
            ("gated_agent", True),
            ("gated_agent", False),
        ]
        (call,) = [p["functionCall"] for p in events[1]["content"]["parts"]]
        (answer,) = [p["functionResponse"] for p in events[2]["content"]["parts"]]
        assert (answer["id"], answer["name"]) == (call["id"], call["name"])
        assert answer["response"]["error"]["type"] == "invocation-cancelled"
        env.open_gate("s")
        after = http.post(f"{APP}/s/invocations", json={"newMessage": MESSAGE, "mode": "wait"})
        assert after.status_code == 200, after.text
        assert after.json()["invocation"]["status"] == "completed"
        assert [e["seq"] for e in _events(http, "s")] == [1, 2, 3, 4, 5, 6, 7]


def test_killed_server_leaves_an_interrupted_invocation_and_a_clean_prefix(env: Env) -> None:
    """With no attempts left (AGENTD_MAX_ATTEMPTS=1) a dead server's run is not taken over:
    it fails `invocation-interrupted` (tests/api/test_durable_runs.py: the takeover)."""
    env.vars["AGENTD_MAX_ATTEMPTS"] = "1"
    first = env.server("a").start()
    with httpx.Client(base_url=first.url, timeout=30) as http:
        _create_session(http, "s")
        iid = _start(http, "s").json()["id"]
        wait_until(lambda: len(_events(http, "s")) >= 2)
    first.kill()
    second = env.server("b").start()
    try:
        with httpx.Client(base_url=second.url, timeout=30) as http:
            wait_until(lambda: _invocation(http, "s", iid)["status"] == "failed", timeout=30)
            invocation = _invocation(http, "s", iid)
            assert invocation["error"]["type"] == "invocation-interrupted"
            events = _events(http, "s")
            # The reaper answered the call the dead replica left open, with the interruption.
            assert [e["seq"] for e in events] == [1, 2, 3]
            assert "functionCall" in json.dumps(events[1])
            (answer,) = [p["functionResponse"] for p in events[2]["content"]["parts"]]
            assert answer["response"]["error"]["type"] == "invocation-interrupted"
            env.open_gate("s")
            after = http.post(f"{APP}/s/invocations", json={"newMessage": MESSAGE, "mode": "wait"})
            assert after.status_code == 200, after.text
            assert after.json()["invocation"]["status"] == "completed"
    finally:
        second.stop()


@pytest.fixture
def pg_env(tmp_path: Path, postgres: PostgresServer, pg_template: str) -> Env:
    """An environment on a fresh PostgreSQL database."""
    return Env(tmp_path, fresh_pg_url(postgres, pg_template))


def test_two_servers_on_postgres_reject_and_enqueue_one_run_at_a_time(pg_env: Env) -> None:
    servers = [pg_env.server("a").start(), pg_env.server("b").start()]
    try:
        a, b = (httpx.Client(base_url=s.url, timeout=60) for s in servers)
        _create_session(a, "s")
        first = _start(a, "s")
        assert first.status_code == 202
        wait_until(lambda: _invocation(a, "s", first.json()["id"])["status"] == "running")
        busy = _start(b, "s", multitaskStrategy="reject")
        assert busy.status_code == 409
        assert busy.json()["type"] == "session-busy"

        queued = _start(b, "s", multitaskStrategy="enqueue")
        assert queued.status_code == 202
        second_id = queued.json()["id"]
        assert _invocation(a, "s", second_id)["status"] == "queued"
        pg_env.open_gate("s")
        wait_until(lambda: _invocation(a, "s", second_id)["status"] == "completed", timeout=60)
        runs = [_invocation(a, "s", i) for i in (first.json()["id"], second_id)]
        assert [r["status"] for r in runs] == ["completed", "completed"]
        assert runs[0]["endTime"] <= runs[1]["startTime"]
        events = _events(a, "s")
        order = [e["invocationId"] for e in events]
        # Each invocation's events are contiguous: first all of one, then all of the other.
        assert order == [runs[0]["id"]] * 4 + [runs[1]["id"]] * 4
        assert [e["seq"] for e in events] == list(range(1, 9))
        a.close()
        b.close()
    finally:
        for live in servers:
            live.stop()


def test_memory_routes_add_and_search(env: Env, server: LiveServer) -> None:
    env.open_gate("s")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        _create_session(http, "s")
        http.post(f"{APP}/s/invocations", json={"newMessage": MESSAGE, "mode": "wait"})
        memory = "/apps/gated_agent/users/u1/memory"
        remembered = http.patch(memory, json={"sessionId": "s"})
        assert (remembered.status_code, remembered.json()) == (200, None)  # ADK's answer
        found = http.get(memory, params={"query": "gate"}).json()["memories"]
        assert [m["content"]["parts"][0]["text"] for m in found] == ["gate opened"]
        assert http.get(memory, params={"query": "nothing-like-it"}).json()["memories"] == []
        missing = http.patch(memory, json={"sessionId": "nope"})
        assert missing.status_code == 404
        assert missing.json()["type"] == "session-not-found"
