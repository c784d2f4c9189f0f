"""Fencing (issue 26, acceptance 1 and 2): a run that lost its lease writes nothing more.

Real processes on a real database. The `durable_agent` test app's `slow_step` tool waits for a
gate file the test creates, and every model call and tool execution is logged with the process
id (tests/apps/durable_agent), so a test can stop a process in the middle of a tool and count
what ran where. Leases are 2 s.

1. A replica stopped with SIGSTOP past its lease while its run waits in a tool: another replica
   takes the run over and completes it; the stopped one, continued with SIGCONT, finds its tool
   done and tries to answer the call: the write is fenced (refused in its own transaction), so
   every call is answered once and the new attempt's history is whole. On PostgreSQL and SQLite
   (two processes on one file).
2. PostgreSQL stopped while runs wait in a tool, long enough for their leases to expire and for
   the final "failed" of each to be retried in the background: when the database is back, the
   runs are taken over and complete; the late "failed" is fenced, never written over the newer
   attempt, so the session's lease stays with it and the invocations queued behind never start
   beside it: each invocation's events form one block of seqs.
"""

import logging
import os
import signal
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_pg_url
from tests.histories import assert_whole, outline
from tests.live_server import GatedProcesses, LiveServer, metric_samples, wait_until
from tests.pgserver import PostgresServer

logger = logging.getLogger(__name__)

APP = "durable_agent"
USER = "u1"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
MESSAGE = {"role": "user", "parts": [{"text": "go"}]}
#: The history of a "go" run: each step once.
GO_OUTLINE = [
    "user: text",
    f"{APP}: call:prepare",
    f"{APP}: response:prepare",
    f"{APP}: call:slow_step",
    f"{APP}: response:slow_step",
    f"{APP}: text",
]


def pid(server: LiveServer) -> int:
    assert server.process is not None
    return server.process.pid


def create_session(http: httpx.Client, session_id: str) -> None:
    created = http.post(SESSIONS, json={"sessionId": session_id})
    assert created.status_code == 201, created.text


def start_run(http: httpx.Client, session_id: str, **body: Any) -> str:
    started = http.post(
        f"{SESSIONS}/{session_id}/invocations",
        json={"newMessage": MESSAGE, "mode": "background", **body},
    )
    assert started.status_code == 202, started.text
    invocation_id: str = started.json()["id"]
    return invocation_id


def invocation(http: httpx.Client, session_id: str, invocation_id: str) -> dict[str, Any]:
    response = http.get(f"{SESSIONS}/{session_id}/invocations/{invocation_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def settled(http: httpx.Client, session_id: str, invocation_id: str) -> dict[str, Any]:
    wait_until(
        lambda: invocation(http, session_id, invocation_id)["status"] not in ("queued", "running"),
        timeout=60,
    )
    return invocation(http, session_id, invocation_id)


def events(http: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    response = http.get(f"{SESSIONS}/{session_id}/events", params={"pageSize": 1000})
    assert response.status_code == 200, response.text
    page: list[dict[str, Any]] = response.json()["events"]
    return page


def assert_every_call_answered_once(history: list[dict[str, Any]]) -> None:
    """The session's seqs are 1..N without a gap, and every call is answered exactly once."""
    seqs = [e["seq"] for e in history]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert_whole(history)


def assert_one_block_per_invocation(history: list[dict[str, Any]]) -> None:
    """The session ran one invocation at a time: ordered by seq, an invocation's events are
    never interleaved with another's."""
    blocks: list[str] = []
    for event in history:
        if not blocks or blocks[-1] != event["invocationId"]:
            blocks.append(event["invocationId"])
    assert len(blocks) == len(set(blocks)), [(e["seq"], e["invocationId"]) for e in history]


def finish_tries(http: httpx.Client) -> float:
    """How many transactions recording an invocation's end the server tried (failed included)."""
    return metric_samples(http, "agentd_db_transaction_seconds_count").get(
        'operation="finish"', 0.0
    )


def fenced(http: httpx.Client) -> dict[str, float]:
    return metric_samples(http, "agentd_fenced_writes_total")


# -- 1. SIGSTOP past the lease -----------------------------------------------------------------


@pytest.fixture
def pg_processes(
    tmp_path: Path, postgres: PostgresServer, pg_template: str
) -> Iterator[GatedProcesses]:
    processes = GatedProcesses(tmp_path, fresh_pg_url(postgres, pg_template))
    yield processes
    processes.stop_all()


@pytest.fixture
def sqlite_processes(tmp_path: Path) -> Iterator[GatedProcesses]:
    processes = GatedProcesses(tmp_path, None)
    yield processes
    processes.stop_all()


def stalled_past_the_lease_writes_nothing(processes: GatedProcesses) -> None:
    stalled = processes.server("a")
    taking_over = processes.server("b")
    with (
        httpx.Client(base_url=stalled.url, timeout=30) as on_a,
        httpx.Client(base_url=taking_over.url, timeout=30) as on_b,
    ):
        create_session(on_a, "s1")
        # A client waits on a (`/run`): once a lets the run go, it answers from the database
        # with what the attempt that took the run over wrote.
        answers: list[httpx.Response] = []
        waiting = threading.Thread(
            target=lambda: answers.append(
                httpx.post(
                    f"{stalled.url}/run",
                    json={"appName": APP, "userId": USER, "sessionId": "s1", "newMessage": MESSAGE},
                    timeout=120,
                )
            )
        )
        waiting.start()
        wait_until(lambda: processes.in_tool("s1", "slow_step", pid(stalled)), timeout=30)
        (listed,) = on_a.get(f"{SESSIONS}/s1/invocations").json()["invocations"]
        invocation_id = listed["id"]

        os.kill(pid(stalled), signal.SIGSTOP)
        try:
            # b takes the run over (the lease is 2 s), runs the interrupted tool again and,
            # once the gate opens, completes it.
            wait_until(lambda: processes.in_tool("s1", "slow_step", pid(taking_over)), timeout=30)
            processes.open_gate("s1")
            final = settled(on_b, "s1", invocation_id)
            history = events(on_b, "s1")
        finally:
            os.kill(pid(stalled), signal.SIGCONT)

        assert final["status"] == "completed", final
        assert final["attempt"] == 2
        assert f":{pid(taking_over)}:" in final["owner"]
        # a wakes up, its tool returns (the gate is open), and its answer to the call is
        # refused: the metric counts it, and the session holds nothing more.
        wait_until(
            lambda: sum(fenced(on_a).values()) >= 1 or len(events(on_b, "s1")) != len(history),
            timeout=30,
        )
        assert outline(events(on_b, "s1")) == outline(history)
        assert events(on_b, "s1") == history
        wait_until(lambda: "was taken over" in stalled.log.read_text(errors="replace"), timeout=30)
        assert outline(history) == GO_OUTLINE
        assert all(e["invocationId"] == invocation_id for e in history)
        assert_every_call_answered_once(history)
        assert invocation(on_b, "s1", invocation_id) == final
        waiting.join(timeout=60)
        (answer,) = answers
        assert answer.status_code == 200, answer.text
        assert [e["id"] for e in answer.json()] == [
            e["id"] for e in history if e["author"] != "user"
        ]
        # The slow step ran on both (at least once), the model never twice for one step.
        log = processes.log("s1")
        assert [e["pid"] for e in log if e["what"] == "model"] == [
            pid(stalled),
            pid(stalled),
            pid(taking_over),
        ]
        logger.info("fenced writes on the stalled replica: %s", fenced(on_a))


def test_a_run_stopped_past_its_lease_commits_nothing_after_the_takeover_on_postgres(
    pg_processes: GatedProcesses,
) -> None:
    stalled_past_the_lease_writes_nothing(pg_processes)


def test_a_run_stopped_past_its_lease_commits_nothing_after_the_takeover_on_sqlite(
    sqlite_processes: GatedProcesses,
) -> None:
    stalled_past_the_lease_writes_nothing(sqlite_processes)


# -- 2. a final status retried after a PostgreSQL outage ---------------------------------------


#: How many times each failed run tries to record its end before PostgreSQL comes back: at
#: once, then retries at 0.5, 1.5, 3.5 and 7.5 s. The next retry comes at 15.5 s, well after
#: the takeovers, which start within a second or two of the database's return.
TRIES_DURING_THE_OUTAGE = 5


def test_a_final_status_retried_after_an_outage_never_overwrites_the_newer_attempt(
    tmp_path: Path, cluster: PostgresServer
) -> None:
    processes = GatedProcesses(tmp_path, cluster.create_database("fencing"))
    sessions = ["s1", "s2", "s3"]
    try:
        running = processes.server("a")
        other = processes.server("b")
        waits: dict[str, dict[str, Any]] = {}
        with (
            httpx.Client(base_url=running.url, timeout=60) as on_a,
            httpx.Client(base_url=other.url, timeout=60) as on_b,
        ):
            first: dict[str, str] = {}
            queued: dict[str, str] = {}
            threads = []
            for sid in sessions:
                create_session(on_a, sid)

            def wait_mode(sid: str) -> None:
                # `/run` waits on a: its message commits, then the run dies with the database.
                answer = httpx.post(
                    f"{running.url}/run",
                    json={"appName": APP, "userId": USER, "sessionId": sid, "newMessage": MESSAGE},
                    timeout=120,
                )
                waits[sid] = {"status": answer.status_code, "body": answer.json()}

            for sid in sessions:
                thread = threading.Thread(target=wait_mode, args=(sid,))
                thread.start()
                threads.append(thread)
                wait_until(partial(processes.in_tool, sid, "slow_step", pid(running)), timeout=30)
                (listed,) = on_a.get(f"{SESSIONS}/{sid}/invocations").json()["invocations"]
                first[sid] = listed["id"]
                queued[sid] = start_run(on_b, sid, multitaskStrategy="enqueue")

            cluster.stop_fast()
            try:
                for sid in sessions:  # the tools return into a database that is gone
                    processes.open_gate(sid)
                wait_until(
                    lambda: finish_tries(on_a) >= TRIES_DURING_THE_OUTAGE * len(sessions),
                    timeout=60,
                )
            finally:
                cluster.start()

            for thread in threads:
                thread.join(timeout=120)
            for sid in sessions:
                final = settled(on_b, sid, first[sid])
                assert final["status"] == "completed", final
                assert final["attempt"] >= 2, final
                settled(on_b, sid, queued[sid])

            # Each first run retries its "failed" once more (its sixth try, 15.5 s after it
            # failed), after the takeovers: the retry is refused and counted, and nothing of it
            # shows (before fencing it landed: status failed, the lease released).
            def retried_or_overwritten() -> bool:
                return fenced(on_a).get('write="status"', 0) >= len(sessions) or any(
                    invocation(on_b, sid, first[sid])["status"] != "completed" for sid in sessions
                )

            wait_until(retried_or_overwritten, timeout=60)
            for sid in sessions:
                assert invocation(on_b, sid, first[sid])["status"] == "completed"
                # The one queued behind failed on b while waiting for the session during the
                # outage: its own late "failed" lands, or a claimer took it over first (then
                # that "failed" is fenced) and ran it after the first, never beside it.
                assert invocation(on_b, sid, queued[sid])["status"] in ("completed", "failed")
                history = events(on_b, sid)
                assert_one_block_per_invocation(history)
                assert_every_call_answered_once(history)
                mine = [e for e in history if e["invocationId"] == first[sid]]
                assert outline(mine) == GO_OUTLINE
            assert fenced(on_a).get('write="status"', 0) == len(sessions)
            # `/run` never said "nothing was committed" for a message that was.
            for sid in sessions:
                answer = waits[sid]
                assert answer["status"] != 503, answer
                if answer["status"] != 200:
                    assert answer["body"]["type"] == "outcome-unknown", answer
                    assert answer["body"]["invocationId"] == first[sid]
            logger.info("fenced writes: %s; /run answers: %s", fenced(on_a), waits)
    finally:
        processes.stop_all()
