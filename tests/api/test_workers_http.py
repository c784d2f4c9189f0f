"""`agentd serve --workers 2` (issue 31, acceptance 1), on SQLite and PostgreSQL.

Both worker processes accept on one shared socket, so the kernel picks which one answers. To
address one, the test stops the other (SIGSTOP: it accepts nothing while stopped) and sends
each request on a new connection. With that: one run per session across the two (reject and
enqueue), a queued run woken by the other process's end with its poll set to an hour, a stream
and its `Last-Event-ID` resume served by the process that does not run the invocation, a cancel
sent to the process that does not run it, `/metrics` counting both, and a graceful stop of all.

The `durable_agent` test app's `slow_step` waits for `<gates>/<session>.open` and logs each
tool run with its process id. Leases are 30 s, so a stopped process keeps its runs.
"""

import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import GatedProcesses, LiveServer, iter_sse, metric_samples, wait_until

APP = "durable_agent"
USER = "u1"
MESSAGE = {"role": "user", "parts": [{"text": "go"}]}


@pytest.fixture
def env(gated_processes: GatedProcesses) -> GatedProcesses:
    """SQLite, then PostgreSQL (`tests/api/conftest.py`); 30 s leases, no enqueue poll."""
    gated_processes.vars |= {"AGENTD_LEASE_SECONDS": "30", "AGENTD_ENQUEUE_POLL_SECONDS": "3600"}
    return gated_processes


class Workers:
    """The server's worker processes, one of which the test lets accept at a time."""

    def __init__(self, server: LiveServer) -> None:
        assert server.process is not None
        self.url = server.url
        parent = server.process.pid
        children = Path(f"/proc/{parent}/task/{parent}/children")
        wait_until(lambda: len(self._workers(children)) == 2)
        self.pids = self._workers(children)

    @staticmethod
    def _workers(children: Path) -> list[int]:
        pids = [int(pid) for pid in children.read_text().split()]
        return [pid for pid in pids if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]

    def only(self, pid: int) -> None:
        """Let only worker `pid` accept connections (the others stopped)."""
        for other in self.pids:
            os.kill(other, signal.SIGCONT if other == pid else signal.SIGSTOP)
        wait_until(
            lambda: _state(pid) != "T" and all(_state(o) == "T" for o in self.pids if o != pid)
        )

    def all(self) -> None:
        for pid in self.pids:
            os.kill(pid, signal.SIGCONT)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request on a connection of its own (so whichever worker accepts it answers)."""
        with httpx.Client(base_url=self.url, timeout=60) as http:
            return http.request(method, path, **kwargs)


def _state(pid: int) -> str:
    """The process's state letter (R, S, T, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _sessions(sid: str = "") -> str:
    return f"/apps/{APP}/users/{USER}/sessions" + (f"/{sid}" if sid else "")


def _start(workers: Workers, sid: str, **fields: Any) -> httpx.Response:
    body = {"newMessage": MESSAGE, "mode": "background", **fields}
    return workers.request("POST", f"{_sessions(sid)}/invocations", json=body)


def _status(workers: Workers, sid: str, iid: str) -> str:
    status: str = workers.request("GET", f"{_sessions(sid)}/invocations/{iid}").json()["status"]
    return status


def test_two_workers_share_sessions_streams_cancels_and_metrics(env: GatedProcesses) -> None:
    server = LiveServer(env.root / "server", env.vars, args=("--workers", "2"))
    env.processes.append(server)
    server.start()
    workers = Workers(server)
    a, b = workers.pids
    try:
        # A run on a; b refuses a second one (reject) and queues a third (enqueue).
        workers.only(a)
        for sid in ("s", "s2"):
            assert workers.request("POST", _sessions(), json={"sessionId": sid}).status_code == 201
        first = _start(workers, "s").json()["id"]
        wait_until(lambda: env.in_tool("s", "slow_step", a))
        to_cancel = _start(workers, "s2").json()["id"]
        wait_until(lambda: env.in_tool("s2", "slow_step", a))
        workers.only(b)
        busy = _start(workers, "s", multitaskStrategy="reject")
        assert busy.status_code == 409
        assert busy.json()["type"].endswith("session-busy")
        queued = _start(workers, "s", multitaskStrategy="enqueue")
        assert queued.status_code == 202, queued.text
        second = queued.json()["id"]
        # b cancels a's run of s2: stored, and told to a (stopped: it hears it when it goes on).
        cancelled = workers.request("POST", f"{_sessions('s2')}/invocations/{to_cancel}/cancel")
        assert cancelled.status_code == 200, cancelled.text

        # b streams a's run of s; a goes on, finishes s (its end wakes b's queued run).
        url = f"{_sessions('s')}/invocations/{first}/events"
        with httpx.Client(base_url=workers.url, timeout=60) as on_b:
            with on_b.stream("GET", url, params={"afterSeq": 0}) as response:
                assert response.status_code == 200
                lines = response.iter_lines()
                frames = [next(iter_sse(lines))]
                workers.all()
                env.open_gate("s")
                frames += list(iter_sse(lines))
        assert frames[-1].event == "done"
        assert json.loads(frames[-1].data)["status"] == "completed"

        wait_until(lambda: _status(workers, "s2", to_cancel) == "cancelled")
        wait_until(lambda: _status(workers, "s", second) == "completed", timeout=30)
        assert env.in_tool("s", "slow_step", b)  # the queued run ran on b
        stored = workers.request("GET", _sessions("s")).json()["events"]
        order = [e["invocationId"] for e in stored]
        assert order == sorted(order, key=[first, second].index)
        mine = [e for e in stored if e["invocationId"] == first]
        assert [f.id for f in frames[:-1]] == [str(e["seq"]) for e in mine]

        # The resume of that stream, from b alone.
        workers.only(b)
        with httpx.Client(base_url=workers.url, timeout=60) as on_b:
            last = {"Last-Event-ID": str(mine[1]["seq"])}
            with on_b.stream("GET", url, headers=last) as resumed:
                rest = list(iter_sse(resumed.iter_lines()))
        assert [f.id for f in rest[:-1]] == [str(e["seq"]) for e in mine[2:]]
        assert rest[-1].event == "done"

        # /metrics, from either worker, counts what both did.
        served = {}
        for pid in (a, b):
            workers.only(pid)
            for _ in range(3):
                assert workers.request("GET", "/health").status_code == 200
            with httpx.Client(base_url=workers.url, timeout=60) as http:
                served[pid] = metric_samples(http, "agentd_http_requests_total")
        workers.all()
        health = 'method="GET",route="/health",status="200"'
        assert served[a][health] >= 3
        assert served[b][health] == served[a][health] + 3
        with httpx.Client(base_url=workers.url, timeout=60) as http:
            wakeups = metric_samples(http, "agentd_enqueue_wakeups_total")
        assert wakeups.get('cause="notification"', 0) >= 1, wakeups
        assert wakeups.get('cause="poll"', 0) == 0, wakeups
    finally:
        workers.all()

    # A graceful stop ends every worker.
    server.stop()
    assert server.process is not None
    assert server.process.returncode == 0
    wait_until(lambda: not [pid for pid in (a, b) if Path(f"/proc/{pid}").exists()])
