"""Calls left open by an invocation that ends without success are answered (issue 14, item 4).

Over real HTTP to agentd server processes, on SQLite and PostgreSQL. The `faulty_tools_agent`
test app's tools raise or sleep on request. Whatever ends the invocation (a tool that raises, a
cancel, a timeout, a killed replica), each function call in the history ends up with exactly one
function response, `{"error": {"type": ..., "detail": ...}}` under the call's id and tool name,
and the session takes the next run.
"""

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.served import get_json
from tests.apps.faulty_tools_agent.agent import BROKE_MESSAGE, REPLY
from tests.conftest import fresh_pg_url, fresh_sqlite_url
from tests.histories import kinds, parts
from tests.live_server import LiveServer, build_agents_dir, wait_until
from tests.pgserver import PostgresServer

APP = "faulty_tools_agent"
USER = "u1"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
BACKENDS = ["sqlite", "postgres"]
#: A dead replica's lease expires after this long; its invocations are then reaped.
LEASE_SECONDS = "1"
#: The `timeout` servers' AGENTD_MAX_INVOCATION_SECONDS.
TIMEOUT_SECONDS = "1"


class Deployment:
    """Server processes on one backend, started together for the module and stopped after it.

    `main` has the default limits; `timeout` gives up on an invocation after a second; `doomed`
    (PostgreSQL only: a replica of `main` on its database) is the one a test kills. Each asks
    `database_url()` for its database, already migrated; they start in parallel, since a server
    spends most of its start-up importing.
    """

    def __init__(self, root: Path, database_url: Callable[[], str], *, with_doomed: bool) -> None:
        self._root = root
        self._database_url = database_url
        self._agents = str(build_agents_dir(root / "agents"))
        self.main = self._server("main")
        self.timeout = self._server("timeout", AGENTD_MAX_INVOCATION_SECONDS=TIMEOUT_SECONDS)
        self.doomed = self._server("doomed") if with_doomed else None
        self._servers = [s for s in (self.main, self.timeout, self.doomed) if s is not None]

    def _server(self, name: str, **settings: str) -> LiveServer:
        env = {
            "AGENTD_DATA_DIR": str(self._root / name / "data"),
            "AGENTD_AGENTS_DIR": self._agents,
            "AGENTD_DATABASE_URL": self._database_url(),
            "AGENTD_LEASE_SECONDS": LEASE_SECONDS,
            # A killed replica's run is failed, not taken over: what these tests check is how
            # a run that ends without success leaves its calls (tests/api/test_durable_runs.py
            # covers takeovers).
            "AGENTD_MAX_ATTEMPTS": "1",
            **settings,
        }
        return LiveServer(self._root / name, env)

    def __enter__(self) -> "Deployment":
        try:
            with ThreadPoolExecutor(len(self._servers)) as pool:
                list(pool.map(LiveServer.start, self._servers))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        with ThreadPoolExecutor(len(self._servers)) as pool:
            list(pool.map(LiveServer.stop, self._servers))


@pytest.fixture(scope="module")
def sqlite_deployment(
    tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
) -> Iterator[Deployment]:
    """Servers on SQLite, each on a migrated file of its own."""
    root = tmp_path_factory.mktemp("open-calls-sqlite")
    with Deployment(
        root, lambda: fresh_sqlite_url(sqlite_template, root), with_doomed=False
    ) as deployment:
        yield deployment


@pytest.fixture(scope="module")
def postgres_deployment(
    tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer, pg_template: str
) -> Iterator[Deployment]:
    """Servers on PostgreSQL, all on one migrated database of their own."""
    root = tmp_path_factory.mktemp("open-calls-postgres")
    url = fresh_pg_url(postgres, pg_template)
    with Deployment(root, lambda: url, with_doomed=True) as deployment:
        yield deployment


@pytest.fixture(params=BACKENDS)
def deployment(request: pytest.FixtureRequest) -> Deployment:
    """The module's servers on each backend."""
    found: Deployment = request.getfixturevalue(f"{request.param}_deployment")
    return found


# -- helpers ------------------------------------------------------------------------------------


def _client(server: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30)


def _new_session(http: httpx.Client) -> str:
    sid = f"s-{uuid.uuid4().hex[:12]}"
    created = http.post(SESSIONS, json={"sessionId": sid})
    assert created.status_code == 201, created.text
    return sid


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _run(http: httpx.Client, sid: str, text: str) -> httpx.Response:
    """ADK's `POST /run`: waits for the run and answers its events (or its problem)."""
    body = {"appName": APP, "userId": USER, "sessionId": sid, "newMessage": _message(text)}
    return http.post("/run", json=body)


def _start(http: httpx.Client, sid: str, text: str) -> str:
    """Start an invocation in the background; its id."""
    started = http.post(
        f"{SESSIONS}/{sid}/invocations", json={"newMessage": _message(text), "mode": "background"}
    )
    assert started.status_code == 202, started.text
    iid: str = started.json()["id"]
    return iid


def _invocation(http: httpx.Client, sid: str, iid: str) -> dict[str, Any]:
    body: dict[str, Any] = get_json(http, f"{SESSIONS}/{sid}/invocations/{iid}")
    return body


def _history(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    """The session's events, as GET session answers them."""
    events: list[dict[str, Any]] = get_json(http, f"{SESSIONS}/{sid}")["events"]
    return events


def _calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p["functionCall"] for e in events for p in parts(e) if p.get("functionCall")]


def _responses(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for e in events for p in parts(e) if p.get("functionResponse")]


def _assert_each_call_answered_once(events: list[dict[str, Any]]) -> None:
    """Every call has an id and exactly one later response with that id; no stray responses."""
    call_at: dict[str, int] = {}
    answered_at: dict[str, list[int]] = {}
    for index, event in enumerate(events):
        for part in parts(event):
            if part.get("functionCall"):
                call_id = part["functionCall"].get("id")
                assert call_id, f"a call without an id: {part}"
                call_at[call_id] = index
            if part.get("functionResponse"):
                answered_at.setdefault(part["functionResponse"].get("id"), []).append(index)
    assert call_at, "the history holds no function call"
    assert Counter({k: len(v) for k, v in answered_at.items()}) == Counter(
        dict.fromkeys(call_at, 1)
    )
    assert all(answered_at[k][0] > call_at[k] for k in call_at)


def _error_answer(call: dict[str, Any], problem_type: str, detail: Any) -> dict[str, Any]:
    """The function response that answers `call` with an error."""
    return {
        "id": call["id"],
        "name": call["name"],
        "response": {"error": {"type": problem_type, "detail": detail}},
    }


def _assert_next_run_succeeds(http: httpx.Client, sid: str) -> None:
    after = _run(http, sid, "hello")
    assert after.status_code == 200, after.text
    assert [p.get("text") for e in after.json() for p in parts(e)] == [REPLY]


def _wait_for_the_call(http: httpx.Client, sid: str) -> dict[str, Any]:
    """Wait until the model's call is persisted (the tool is then running); the call."""
    wait_until(lambda: _calls(_history(http, sid)))
    (call,) = _calls(_history(http, sid))
    return call


# -- a. a tool that raises ----------------------------------------------------------------------


def test_a_tool_that_raises_fails_the_run_and_its_call_is_answered_with_the_exception(
    deployment: Deployment,
) -> None:
    with _client(deployment.main) as http:
        sid = _new_session(http)
        run = _run(http, sid, "raise")
        assert run.status_code == 500, run.text
        assert run.json()["type"] == "invocation-failed"
        events = _history(http, sid)
        assert kinds(events) == [
            "user: text",
            f"{APP}: functionCall",
            f"{APP}: functionResponse",
            f"{APP}: error ToolBroke",
        ]
        (call,) = _calls(events)
        assert call["name"] == "explode"
        assert _responses(events) == [_error_answer(call, "ToolBroke", BROKE_MESSAGE)]
        assert events[2]["content"]["role"] == "user"
        (iid,) = {e["invocationId"] for e in events}  # the answer belongs to the invocation
        invocation = _invocation(http, sid, iid)
        assert invocation["status"] == "failed"
        assert invocation["error"]["type"] == "invocation-failed"
        _assert_each_call_answered_once(events)
        _assert_next_run_succeeds(http, sid)
        _assert_each_call_answered_once(_history(http, sid))


# -- b. cancel mid-tool -------------------------------------------------------------------------


def test_cancel_mid_tool_answers_the_open_call_with_invocation_cancelled(
    deployment: Deployment,
) -> None:
    with _client(deployment.main) as http:
        sid = _new_session(http)
        iid = _start(http, sid, "wait")
        call = _wait_for_the_call(http, sid)
        cancelled = http.post(f"{SESSIONS}/{sid}/invocations/{iid}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        error = cancelled.json()["error"]
        assert error["type"] == "invocation-cancelled"
        events = _history(http, sid)
        assert kinds(events) == [
            "user: text",
            f"{APP}: functionCall",
            f"{APP}: functionResponse",
        ]
        assert call["name"] == "linger"
        assert _responses(events) == [
            _error_answer(call, "invocation-cancelled", error.get("detail"))
        ]
        assert events[-1]["invocationId"] == iid
        _assert_each_call_answered_once(events)
        _assert_next_run_succeeds(http, sid)


# -- c. timeout mid-tool ------------------------------------------------------------------------


def test_timeout_mid_tool_answers_the_open_call_with_invocation_timeout(
    deployment: Deployment,
) -> None:
    with _client(deployment.timeout) as http:
        sid = _new_session(http)
        iid = _start(http, sid, "wait")
        wait_until(lambda: _invocation(http, sid, iid)["status"] not in {"queued", "running"})
        invocation = _invocation(http, sid, iid)
        assert invocation["status"] == "failed"
        error = invocation["error"]
        assert error["type"] == "invocation-timeout"
        events = _history(http, sid)
        assert kinds(events) == [
            "user: text",
            f"{APP}: functionCall",
            f"{APP}: functionResponse",
        ]
        (call,) = _calls(events)
        assert call["name"] == "linger"
        assert _responses(events) == [
            _error_answer(call, "invocation-timeout", error.get("detail"))
        ]
        assert events[-1]["invocationId"] == iid
        _assert_each_call_answered_once(events)
        _assert_next_run_succeeds(http, sid)


# -- d. a replica killed mid-tool ---------------------------------------------------------------


def test_a_killed_replicas_open_call_is_answered_by_the_reaper_on_another_replica(
    postgres_deployment: Deployment,
) -> None:
    doomed = postgres_deployment.doomed
    assert doomed is not None
    with _client(doomed) as http:
        sid = _new_session(http)
        iid = _start(http, sid, "wait")
        call = _wait_for_the_call(http, sid)
    doomed.kill()  # SIGKILL: nothing of the run is recorded by its own replica
    with _client(postgres_deployment.main) as http:
        wait_until(lambda: _invocation(http, sid, iid)["status"] == "failed")
        error = _invocation(http, sid, iid)["error"]
        assert error["type"] == "invocation-interrupted"
        events = _history(http, sid)
        assert kinds(events) == [
            "user: text",
            f"{APP}: functionCall",
            f"{APP}: functionResponse",
        ]
        assert call["name"] == "linger"
        assert _responses(events) == [
            _error_answer(call, "invocation-interrupted", error.get("detail"))
        ]
        assert events[-1]["invocationId"] == iid
        _assert_each_call_answered_once(events)
        _assert_next_run_succeeds(http, sid)
        _assert_each_call_answered_once(_history(http, sid))


# -- e. parallel calls, one of which raises -----------------------------------------------------


def test_parallel_calls_where_one_tool_raises_are_all_answered_and_the_run_fails(
    deployment: Deployment,
) -> None:
    with _client(deployment.main) as http:
        sid = _new_session(http)
        run = _run(http, sid, "both")
        assert run.status_code == 500, run.text
        assert run.json()["type"] == "invocation-failed"
        events = _history(http, sid)
        assert kinds(events) == [
            "user: text",
            f"{APP}: functionCall functionCall",
            f"{APP}: functionResponse functionResponse",
            f"{APP}: error ToolBroke",
        ]
        calls = _calls(events)
        assert [c["name"] for c in calls] == ["linger", "explode"]
        assert len({c["id"] for c in calls}) == 2
        assert _responses(events) == [
            _error_answer(call, "ToolBroke", BROKE_MESSAGE) for call in calls
        ]
        (iid,) = {e["invocationId"] for e in events}
        assert _invocation(http, sid, iid)["status"] == "failed"
        _assert_each_call_answered_once(events)
        _assert_next_run_succeeds(http, sid)
