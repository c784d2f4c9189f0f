"""Two server processes on one database (issue 31, acceptance 1), on SQLite and PostgreSQL.

What `agentd serve --workers 2` relies on, with the processes addressed one by one (a shared
port would let the kernel choose): one run per session across both (reject and enqueue), a
queued run woken by the other process's end with its poll set to an hour, a stream and its
`Last-Event-ID` resume served by the process that does not run the invocation, and a cancel
sent to either process stopping it. On SQLite the processes hear each other through
`app.db.local_notify`, on PostgreSQL through LISTEN/NOTIFY.

The `durable_agent` test app's `slow_step` waits for `<gates>/<session>.open` and logs each
tool run with its process id.
"""

import json
from typing import Any

import httpx
import pytest

from tests.live_server import GatedProcesses, iter_sse, metric_samples, wait_until

APP = "durable_agent"
USER = "u1"
MESSAGE = {"role": "user", "parts": [{"text": "go"}]}
#: Queued runs would poll their session once an hour: only a notification can wake them.
NO_POLL = {"AGENTD_ENQUEUE_POLL_SECONDS": "3600"}


@pytest.fixture
def env(gated_processes: GatedProcesses) -> GatedProcesses:
    """Two processes' database: SQLite, then PostgreSQL (`tests/api/conftest.py`)."""
    return gated_processes


def _sessions(sid: str = "") -> str:
    return f"/apps/{APP}/users/{USER}/sessions" + (f"/{sid}" if sid else "")


def _start(http: httpx.Client, sid: str, **fields: Any) -> httpx.Response:
    body = {"newMessage": MESSAGE, "mode": "background", **fields}
    return http.post(f"{_sessions(sid)}/invocations", json=body)


def _status(http: httpx.Client, sid: str, iid: str) -> str:
    status: str = http.get(f"{_sessions(sid)}/invocations/{iid}").json()["status"]
    return status


def _running_in_tool(env: GatedProcesses, http: httpx.Client, sid: str, pid: int) -> str:
    """Start an invocation of `sid` on the process `http` talks to (pid `pid`); its id, once
    it waits in `slow_step`."""
    assert http.post(_sessions(), json={"sessionId": sid}).status_code == 201
    started = _start(http, sid)
    assert started.status_code == 202, started.text
    wait_until(lambda: env.in_tool(sid, "slow_step", pid))
    iid: str = started.json()["id"]
    return iid


def test_one_run_per_session_across_processes_and_the_queued_one_woken_by_the_others_end(
    env: GatedProcesses,
) -> None:
    a, b = env.server("a", **NO_POLL), env.server("b", **NO_POLL)
    assert a.process is not None
    assert b.process is not None
    with (
        httpx.Client(base_url=a.url, timeout=60) as on_a,
        httpx.Client(base_url=b.url, timeout=60) as on_b,
    ):
        first = _running_in_tool(env, on_a, "s", a.process.pid)

        busy = _start(on_b, "s", multitaskStrategy="reject")
        assert busy.status_code == 409
        assert busy.json()["type"].endswith("session-busy")
        queued = _start(on_b, "s", multitaskStrategy="enqueue")
        assert queued.status_code == 202, queued.text
        second = queued.json()["id"]
        assert _status(on_b, "s", second) == "queued"

        env.open_gate("s")
        wait_until(lambda: _status(on_b, "s", second) == "completed", timeout=30)
        assert _status(on_a, "s", first) == "completed"
        # b's queued run ran on b once a's ended, woken by a's notification, never by a poll.
        assert env.in_tool("s", "slow_step", b.process.pid)
        wakeups = metric_samples(on_b, "agentd_enqueue_wakeups_total")
        assert wakeups.get('cause="notification"', 0) >= 1, wakeups
        assert wakeups.get('cause="poll"', 0) == 0, wakeups
        events = on_a.get(_sessions("s")).json()["events"]
        order = [e["invocationId"] for e in events]
        assert order == sorted(order, key=[first, second].index)  # one after the other


def test_a_stream_and_its_resume_are_served_by_the_process_that_does_not_run_it(
    env: GatedProcesses,
) -> None:
    a, b = env.server("a"), env.server("b")
    assert a.process is not None
    with (
        httpx.Client(base_url=a.url, timeout=60) as on_a,
        httpx.Client(base_url=b.url, timeout=60) as on_b,
    ):
        iid = _running_in_tool(env, on_a, "s1", a.process.pid)
        url = f"{_sessions('s1')}/invocations/{iid}/events"
        with on_b.stream("GET", url, params={"afterSeq": 0}) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            first = next(iter_sse(lines))
            assert first.event != "done"
            env.open_gate("s1")
            frames = [first, *iter_sse(lines)]
        assert frames[-1].event == "done"
        assert json.loads(frames[-1].data)["status"] == "completed"
        stored = on_b.get(_sessions("s1")).json()["events"]
        assert [f.id for f in frames[:-1]] == [str(e["seq"]) for e in stored]
        # b read on when a published (a learned that b follows), not on its timer.
        wakeups = metric_samples(on_b, "agentd_follow_wakeups_total")
        assert wakeups.get('cause="notification"', 0) >= 1, wakeups
        assert wakeups.get('cause="timer"', 0) == 0, wakeups

        with on_b.stream("GET", url, headers={"Last-Event-ID": str(stored[1]["seq"])}) as resumed:
            rest = list(iter_sse(resumed.iter_lines()))
        assert [f.id for f in rest[:-1]] == [str(e["seq"]) for e in stored[2:]]
        assert rest[-1].event == "done"


def test_a_cancel_sent_to_either_process_stops_the_run(env: GatedProcesses) -> None:
    a, b = env.server("a"), env.server("b")
    assert a.process is not None
    with (
        httpx.Client(base_url=a.url, timeout=60) as on_a,
        httpx.Client(base_url=b.url, timeout=60) as on_b,
    ):
        runs = {sid: _running_in_tool(env, on_a, sid, a.process.pid) for sid in ("s1", "s2")}
        for sid, http in (("s1", on_a), ("s2", on_b)):
            cancelled = http.post(f"{_sessions(sid)}/invocations/{runs[sid]}/cancel")
            assert cancelled.status_code == 200, cancelled.text
        for sid, iid in runs.items():
            wait_until(lambda: _status(on_b, sid, iid) == "cancelled")  # noqa: B023 (called now)
            last = on_a.get(_sessions(sid)).json()["events"][-1]
            (answer,) = [p["functionResponse"] for p in last["content"]["parts"]]
            assert answer["name"] == "slow_step"  # its open call answered with the cancellation
