"""Blind writes never conflict, over real HTTP (issue 14, items 3 and 6c).

A PATCH without `If-Match` and a run's own appends are writes nobody conditioned: however many
other writers touch the session, they answer 200 and land with gap-free seqs; only a failed
`If-Match` precondition is a 409 `session-conflict`. PostgreSQL runs two replicas on one database
(the runs' blobs in one shared folder), SQLite one replica; each backend is one module-scoped
deployment and each test works in a user of its own.
"""

import asyncio
import itertools
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, build_agents_dir
from tests.pgserver import PostgresServer
from tests.problems import assert_problem

APP = "capital_agent"
PATCHES = 100
RUN_SESSIONS = 4
RUNS_PER_SESSION = 5
FINAL_TEXT = "The capital of France is Paris."


def _replica(root: Path, database_url: str) -> LiveServer:
    return LiveServer(
        root,
        {
            "AGENTD_DATABASE_URL": database_url,
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
            "AGENTD_RATE_LIMIT_PER_MINUTE": "0",
        },
    )


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def replicas(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[LiveServer]]:
    """SQLite: one server. PostgreSQL: two servers on one database and one blob folder."""
    root = tmp_path_factory.mktemp(f"hardening-blind-{request.param}")
    if request.param == "sqlite":
        servers = [_replica(root, f"sqlite+aiosqlite:///{root / 'agentd.db'}")]
    else:
        postgres: PostgresServer = request.getfixturevalue("postgres")
        template: str = request.getfixturevalue("pg_template")
        url = postgres.create_database(f"blind_{uuid.uuid4().hex}", template)
        servers = [_replica(root, url), _replica(root, url)]
    # Started side by side: each start is mostly the interpreter importing the app.
    with ThreadPoolExecutor(len(servers)) as pool:
        starts = [pool.submit(server.start) for server in servers]
    try:
        yield [start.result() for start in starts]
    finally:
        for server in servers:
            server.stop()


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:12]}"


def _session_path(user: str, session_id: str) -> str:
    return f"/apps/{APP}/users/{user}/sessions/{session_id}"


def _clients(replicas: list[LiveServer]) -> list[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    return [httpx.AsyncClient(base_url=r.url, timeout=60, limits=limits) for r in replicas]


async def _create_session(http: httpx.AsyncClient, user: str, session_id: str) -> None:
    created = await http.post(
        f"/apps/{APP}/users/{user}/sessions", json={"sessionId": session_id, "state": {"seed": 0}}
    )
    assert created.status_code == 201, created.text


async def _session(http: httpx.AsyncClient, user: str, session_id: str) -> dict[str, Any]:
    got = await http.get(_session_path(user, session_id))
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    body["etag"] = got.headers["etag"]
    return body


def _assert_gap_free(events: list[dict[str, Any]]) -> None:
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


async def test_concurrent_blind_patches_all_succeed_with_gap_free_seqs(
    replicas: list[LiveServer],
) -> None:
    user = _user()
    clients = _clients(replicas)
    try:
        await _create_session(clients[0], user, "s1")
        path = _session_path(user, "s1")
        answers = await asyncio.gather(
            *(
                clients[i % len(clients)].patch(path, json={"stateDelta": {f"k{i}": i}})
                for i in range(PATCHES)
            )
        )
        failed = [(a.status_code, a.text) for a in answers if a.status_code != 200]
        assert failed == [], f"{len(failed)} of {PATCHES} blind PATCHes failed: {failed[:3]}"

        for client in clients:  # every replica reads the same session
            session = await _session(client, user, "s1")
            events = session["events"]
            assert len(events) == PATCHES
            _assert_gap_free(events)
            assert session["etag"] == f'"{PATCHES}"'
            expected = {f"k{i}": i for i in range(PATCHES)}
            assert {k: v for k, v in session["state"].items() if k != "seed"} == expected
            assert sorted(
                (k for e in events for k in e["actions"]["stateDelta"]), key=lambda k: int(k[1:])
            ) == list(expected)
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


async def test_patch_with_a_stale_if_match_is_still_409_session_conflict(
    replicas: list[LiveServer],
) -> None:
    user = _user()
    clients = _clients(replicas)
    try:
        await _create_session(clients[0], user, "s1")
        path = _session_path(user, "s1")
        stale = (await _session(clients[0], user, "s1"))["etag"]
        fresh = await clients[-1].patch(
            path, json={"stateDelta": {"first": 1}}, headers={"If-Match": stale}
        )
        assert fresh.status_code == 200, fresh.text
        assert fresh.headers["etag"] != stale

        conflict = await clients[0].patch(
            path, json={"stateDelta": {"second": 2}}, headers={"If-Match": stale}
        )
        assert_problem(conflict, 409, "session-conflict")

        session = await _session(clients[-1], user, "s1")
        assert session["state"] == {"seed": 0, "first": 1}
        assert len(session["events"]) == 1
        assert session["etag"] == fresh.headers["etag"]
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


def _is_final_response(event: dict[str, Any]) -> bool:
    parts = (event.get("content") or {}).get("parts") or []
    return (
        event["author"] != "user"
        and not event.get("partial", False)
        and bool(parts)
        and all("functionCall" not in p and "functionResponse" not in p for p in parts)
    )


async def test_runs_under_a_blind_patch_loop_never_conflict_and_leave_no_partial_turn(
    replicas: list[LiveServer],
) -> None:
    user = _user()
    clients = _clients(replicas)
    sessions = [f"s{n}" for n in range(RUN_SESSIONS)]
    runs_done = asyncio.Event()
    patch_answers: list[tuple[str, str, int, str]] = []
    run_answers: list[tuple[str, int, Any]] = []

    async def run_sequence(n: int, session_id: str) -> None:
        for i in range(RUNS_PER_SESSION):
            client = clients[(n + i) % len(clients)]
            answer = await client.post(
                "/run",
                json={
                    "appName": APP,
                    "userId": user,
                    "sessionId": session_id,
                    "newMessage": {
                        "role": "user",
                        "parts": [{"text": "What is the capital of France?"}],
                    },
                },
            )
            body = answer.json() if answer.status_code == 200 else answer.text
            run_answers.append((session_id, answer.status_code, body))

    async def patch_loop(n: int) -> None:
        for i in itertools.count():
            if runs_done.is_set() and i >= RUNS_PER_SESSION:
                return
            session_id = sessions[(n + i) % len(sessions)]
            key = f"p{n}_{i}"
            answer = await clients[(n + i + 1) % len(clients)].patch(
                _session_path(user, session_id), json={"stateDelta": {key: i}}
            )
            patch_answers.append((session_id, key, answer.status_code, answer.text))

    try:
        for session_id in sessions:
            await _create_session(clients[0], user, session_id)
        patchers = [asyncio.create_task(patch_loop(n)) for n in range(len(sessions))]
        await asyncio.gather(*(run_sequence(n, s) for n, s in enumerate(sessions)))
        runs_done.set()
        await asyncio.gather(*patchers)

        stored = {s: await _session(clients[-1], user, s) for s in sessions}
        runs: dict[str, list[list[dict[str, Any]]]] = {}
        blind: dict[str, list[list[dict[str, Any]]]] = {}
        for session_id, session in stored.items():
            # The data first: seqs without gaps, and no run that stopped half way.
            _assert_gap_free(session["events"])
            by_invocation: dict[str, list[dict[str, Any]]] = {}
            for event in session["events"]:
                by_invocation.setdefault(event["invocationId"], []).append(event)
            runs[session_id] = [evs for evs in by_invocation.values() if evs[0].get("content")]
            blind[session_id] = [evs for evs in by_invocation.values() if not evs[0].get("content")]
            for run_events in runs[session_id]:
                last = run_events[-1]
                assert _is_final_response(last) or last.get("errorCode"), run_events

        failed_runs = [(s, status, body) for s, status, body in run_answers if status != 200]
        assert failed_runs == [], (
            f"{len(failed_runs)} of {len(run_answers)} runs failed: {failed_runs[:2]}"
        )
        assert len(run_answers) == RUN_SESSIONS * RUNS_PER_SESSION
        for _, _, events in run_answers:
            assert events[-1]["content"]["parts"][0]["text"] == FINAL_TEXT
        failed_patches = [p for p in patch_answers if p[2] != 200]
        assert failed_patches == [], (
            f"{len(failed_patches)} of {len(patch_answers)} PATCHes failed: {failed_patches[:2]}"
        )

        for session_id, session in stored.items():
            written = {key for s, key, _, _ in patch_answers if s == session_id}
            assert written <= set(session["state"]), written - set(session["state"])
            assert len(blind[session_id]) == len(written)
            assert len(runs[session_id]) == RUNS_PER_SESSION
            invocations = await clients[0].get(f"{_session_path(user, session_id)}/invocations")
            statuses = [i["status"] for i in invocations.json()["invocations"]]
            assert statuses == ["completed"] * RUNS_PER_SESSION
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
