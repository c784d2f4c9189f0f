"""Durable runs over real processes (issue 19, acceptance 1, 2, 4 and 5).

The `durable_agent` test app logs every model call and tool execution (with the process id and
the call's idempotency key) to `<gates>/<session>.log`, and its `slow_step` tool waits for the
test to open `<gates>/<session>.open`, so a test can kill or stop the process in the middle of
a tool and then count what ran where. Leases are 2 s, so a dead process's run is taken over
within a few seconds.
"""

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_pg_url
from tests.histories import assert_whole, outline
from tests.live_server import GatedProcesses as Env
from tests.live_server import (
    LiveServer,
    free_port,
    iter_sse,
    metric_samples,
    wait_until,
)
from tests.pgserver import PostgresServer

APP = "durable_agent"
USER = "u1"


@pytest.fixture
def sqlite_env(tmp_path: Path) -> Iterator[Env]:
    env = Env(tmp_path, None)
    yield env
    env.stop_all()


@pytest.fixture
def pg_env(tmp_path: Path, postgres: PostgresServer, pg_template: str) -> Iterator[Env]:
    env = Env(tmp_path, fresh_pg_url(postgres, pg_template))
    yield env
    env.stop_all()


def _base(sid: str, app: str = APP) -> str:
    return f"/apps/{app}/users/{USER}/sessions/{sid}"


def _start(
    http: httpx.Client, sid: str, text: str = "go", mode: str = "background", app: str = APP
) -> str:
    created = http.post(f"/apps/{app}/users/{USER}/sessions", json={"sessionId": sid})
    assert created.status_code == 201, created.text
    started = http.post(
        f"{_base(sid, app)}/invocations",
        json={"newMessage": {"role": "user", "parts": [{"text": text}]}, "mode": mode},
    )
    assert started.status_code in (200, 201, 202), started.text
    invocation_id: str = started.json().get("id") or started.json()["invocation"]["id"]
    return invocation_id


def _invocation(http: httpx.Client, sid: str, iid: str, app: str = APP) -> dict[str, Any]:
    body: dict[str, Any] = http.get(f"{_base(sid, app)}/invocations/{iid}").json()
    return body


def _settled(
    http: httpx.Client, sid: str, iid: str, timeout: float = 40, app: str = APP
) -> dict[str, Any]:
    wait_until(
        lambda: _invocation(http, sid, iid, app)["status"] not in ("queued", "running"),
        timeout=timeout,
    )
    return _invocation(http, sid, iid, app)


def _events(http: httpx.Client, sid: str, app: str = APP) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = http.get(_base(sid, app)).json()["events"]
    return events


GO_OUTLINE = [
    "user: text",
    f"{APP}: call:prepare",
    f"{APP}: response:prepare",
    f"{APP}: call:slow_step",
    f"{APP}: response:slow_step",
    f"{APP}: text",
]


def _wait_for_slow_step(env: Env, sid: str, pid: int) -> None:
    wait_until(
        lambda: any(
            e["what"] == "tool" and e["name"] == "slow_step" and e["pid"] == pid
            for e in env.log(sid)
        ),
        timeout=30,
    )


def _check_the_takeover(
    env: Env, http: httpx.Client, sid: str, iid: str, first: int, second: int
) -> None:
    """The run ended on `second` at attempt 2 with each step once in its history; only the
    interrupted tool ran twice, with the same idempotency key."""
    final = _settled(http, sid, iid)
    assert final["status"] == "completed", final
    assert final["attempt"] == 2
    assert f":{second}:" in final["owner"]
    assert final["heartbeatTime"] is not None
    events = _events(http, sid)
    assert outline(events) == GO_OUTLINE
    assert all(e["invocationId"] == iid for e in events)
    assert_whole(events)
    log = env.log(sid)
    tools = [(e["name"], e["pid"], e["key"]) for e in log if e["what"] == "tool"]
    assert [(name, pid) for name, pid, _ in tools] == [
        ("prepare", first),
        ("slow_step", first),
        ("slow_step", second),
    ]
    assert tools[1][2] == tools[2][2]  # the same call: the same idempotency key
    models = [e["pid"] for e in log if e["what"] == "model"]
    assert models == [first, first, second]  # no model step redone


# -- 1. SIGKILL mid-tool, a second process alive (PostgreSQL) --------------------------------


def test_a_run_killed_mid_tool_completes_on_the_other_replica_at_attempt_2(pg_env: Env) -> None:
    first = pg_env.server("a")
    second = pg_env.server("b")
    with httpx.Client(base_url=first.url, timeout=30) as http:
        iid = _start(http, "s1")
    assert first.process is not None
    assert second.process is not None
    _wait_for_slow_step(pg_env, "s1", first.process.pid)
    first.kill()
    pg_env.open_gate("s1")
    with httpx.Client(base_url=second.url, timeout=30) as http:
        _check_the_takeover(pg_env, http, "s1", iid, first.process.pid, second.process.pid)
        assert metric_samples(http, "agentd_queue_claims_total") == {'kind="takeover"': 1.0}
        assert metric_samples(http, "agentd_queue_attempts_sum") == {"": 2.0}


# -- 2. the same on SQLite, with a restart of the only process --------------------------------


def test_a_run_killed_mid_tool_completes_after_a_restart_on_sqlite(sqlite_env: Env) -> None:
    first = sqlite_env.server("a")
    with httpx.Client(base_url=first.url, timeout=30) as http:
        iid = _start(http, "s1")
    assert first.process is not None
    _wait_for_slow_step(sqlite_env, "s1", first.process.pid)
    first.kill()
    sqlite_env.open_gate("s1")
    restarted = sqlite_env.server("a2")
    assert restarted.process is not None
    with httpx.Client(base_url=restarted.url, timeout=30) as http:
        _check_the_takeover(sqlite_env, http, "s1", iid, first.process.pid, restarted.process.pid)


# -- 2b. a user's own workflow agent goes on through its resume hook after the takeover ------

FLOW = "custom_flow_agent"


def test_a_users_workflow_agent_goes_on_through_its_hook_after_a_sigkill_takeover(
    pg_env: Env,
) -> None:
    """`LastToFirst` (tests/apps/custom_flow_agent) runs worker, then closer. The process dies
    in worker's tool; the other replica reruns that call, worker answers, and LastToFirst's
    `_resume_after_async` runs closer: once, on the replica that took over (issue 27,
    acceptance 3)."""
    first = pg_env.server("a")
    second = pg_env.server("b")
    assert first.process is not None
    assert second.process is not None
    with httpx.Client(base_url=first.url, timeout=30) as http:
        iid = _start(http, "s1", app=FLOW)
    pids = first.process.pid, second.process.pid
    wait_until(lambda: pg_env.in_tool("s1", "slow_step", pids[0]), timeout=30)
    first.kill()
    pg_env.open_gate("s1")
    with httpx.Client(base_url=second.url, timeout=30) as http:
        final = _settled(http, "s1", iid, app=FLOW)
        assert (final["status"], final["attempt"]) == ("completed", 2), final
        events = _events(http, "s1", app=FLOW)
    assert outline(events) == [
        "user: text",
        f"{FLOW}_worker: call:slow_step",
        f"{FLOW}_worker: response:slow_step",
        f"{FLOW}_worker: text",
        f"{FLOW}_closer: text",
    ]
    assert_whole(events)
    ran = [(e["what"], e.get("name") or e.get("agent"), e["pid"]) for e in pg_env.log("s1")]
    assert ran == [
        ("model", "worker", pids[0]),
        ("tool", "slow_step", pids[0]),
        ("tool", "slow_step", pids[1]),  # the interrupted call, rerun
        ("model", "worker", pids[1]),
        ("agent", "closer", pids[1]),  # the hook, once
    ]


# -- 4. SIGTERM during runs: they finish, or are handed back and complete elsewhere -----------


def test_sigterm_finishes_or_hands_back_and_nothing_fails(pg_env: Env) -> None:
    stopping = pg_env.server("a", AGENTD_SHUTDOWN_GRACE_SECONDS="2")
    other = pg_env.server("b")
    assert stopping.process is not None
    assert other.process is not None
    with httpx.Client(base_url=stopping.url, timeout=30) as http:
        quick = _start(http, "quick")
        slow = _start(http, "slow")
    for sid in ("quick", "slow"):
        _wait_for_slow_step(pg_env, sid, stopping.process.pid)

    stopping.process.terminate()  # SIGTERM
    time.sleep(0.3)
    pg_env.open_gate("quick")  # ends within the grace period, on the stopping replica
    stopping.process.wait(timeout=30)
    pg_env.open_gate("slow")  # handed back: it completes on the other replica

    with httpx.Client(base_url=other.url, timeout=30) as http:
        finished = _settled(http, "quick", quick)
        assert (finished["status"], finished["attempt"]) == ("completed", 1)
        assert f":{stopping.process.pid}:" in finished["owner"]
        _check_the_takeover(pg_env, http, "slow", slow, stopping.process.pid, other.process.pid)


# -- 5. streaming from an API replica while a worker runs it; cancel through the API ----------


def test_a_stream_from_the_api_replica_follows_a_run_on_a_worker_and_cancel_reaches_it(
    pg_env: Env,
) -> None:
    api = pg_env.server("api", AGENTD_RUN_INVOCATIONS="false")
    metrics_port = free_port()
    worker = pg_env.worker("worker", AGENTD_WORKER_METRICS_PORT=str(metrics_port))
    assert worker.process is not None
    assert api.process is not None
    with httpx.Client(base_url=api.url, timeout=60) as http:
        assert http.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": "s1"})
        pg_env.open_gate("s1")
        body = {"newMessage": {"role": "user", "parts": [{"text": "go"}]}, "mode": "stream"}
        frames = []
        with http.stream("POST", f"{_base('s1')}/invocations", json=body) as response:
            assert response.status_code in (200, 201), response.read()
            frames = list(iter_sse(response.iter_lines()))
        kinds = [f.event for f in frames]
        assert kinds[-1] == "done"
        events = [json.loads(f.data) for f in frames if f.event != "done"]
        done = json.loads(frames[-1].data)
        assert done["status"] == "completed"
        assert f":{worker.process.pid}:" in done["owner"]  # it ran on the worker
        stored = _events(http, "s1")
        assert [e["id"] for e in events] == [e["id"] for e in stored]  # each once, in order
        assert [f.id for f in frames[:-1]] == [str(e["seq"]) for e in stored]
        assert all(e["pid"] == worker.process.pid for e in pg_env.log("s1"))
        # The API replica read on when the worker published events, never by its timer.
        wakeups = metric_samples(http, "agentd_follow_wakeups_total")
        assert wakeups.get('cause="notification"', 0) >= 1
        assert wakeups.get('cause="timer"', 0) == 0
        # Resuming with Last-Event-ID on the API replica gives the rest, then `done`.
        iid1 = done["id"]
        resumed_url = f"{_base('s1')}/invocations/{iid1}/events"
        last_id = {"Last-Event-ID": str(stored[1]["seq"])}
        with http.stream("GET", resumed_url, headers=last_id) as response:
            rest = list(iter_sse(response.iter_lines()))
        assert [f.id for f in rest[:-1]] == [str(e["seq"]) for e in stored[2:]]
        assert rest[-1].event == "done"
        # The worker's own metrics (it serves no API): what it took from the queue, how fast.
        with httpx.Client(base_url=f"http://127.0.0.1:{metrics_port}", timeout=10) as scrape:
            assert metric_samples(scrape, "agentd_queue_claims_total") == {'kind="queued"': 1.0}
            assert metric_samples(scrape, "agentd_queue_claim_latency_seconds_count") == {"": 1.0}
            assert "agentd_queue_depth" in scrape.get("/metrics").text

        iid = _start(http, "s2")
        _wait_for_slow_step(pg_env, "s2", worker.process.pid)
        cancelled = http.post(f"{_base('s2')}/invocations/{iid}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        final = _settled(http, "s2", iid, timeout=20)
        assert final["status"] == "cancelled"
        steps = outline(_events(http, "s2"))
        assert steps[-1] == f"{APP}: response:slow_step"  # answered with the cancellation
        assert steps.count(f"{APP}: text") == 0


# -- 3. chaos: 2 API replicas, 2 workers, one worker SIGKILLed twice ---------------------------

NAP_OUTLINE = [
    "user: text",
    f"{APP}: call:nap",
    f"{APP}: response:nap",
    f"{APP}: call:nap",
    f"{APP}: response:nap",
    f"{APP}: text",
]


def test_chaos_every_run_completes_whole_and_only_interrupted_tools_run_twice(
    pg_env: Env,
) -> None:
    apis = [pg_env.server(f"api-{n}", AGENTD_RUN_INVOCATIONS="false") for n in range(2)]
    settings = {"AGENTD_WORKER_CONCURRENCY": "6"}
    steady = pg_env.worker("steady", **settings)
    doomed = pg_env.worker("doomed-1", **settings)
    killed: set[int] = set()
    runs: list[tuple[str, str]] = []
    clients = [httpx.Client(base_url=api.url, timeout=30) for api in apis]
    try:
        for n in range(40):
            sid = f"c{n}"
            runs.append((sid, _start(clients[n % 2], sid, "nap")))
        for name in ("doomed-2", "doomed-3"):  # SIGKILL twice, each time mid-run
            wait_until(
                lambda target=doomed: _owns_a_run(pg_env, target, runs),  # type: ignore[misc]
                timeout=30,
                interval=0.02,
            )
            assert doomed.process is not None
            killed.add(doomed.process.pid)
            doomed.kill()
            doomed = pg_env.worker(name, **settings)
        finals = [_settled(clients[0], sid, iid, timeout=90) for sid, iid in runs]
        assert [f["status"] for f in finals] == ["completed"] * 40
        assert any(f["attempt"] >= 2 for f in finals)  # the kills did interrupt runs
        repeated = 0
        for sid, iid in runs:
            events = _events(clients[1], sid)
            assert outline(events) == NAP_OUTLINE, sid
            assert all(e["invocationId"] == iid for e in events)
            assert_whole(events)
            executions: dict[str, list[int]] = {}
            for entry in pg_env.log(sid):
                if entry["what"] == "tool":
                    executions.setdefault(entry["key"], []).append(entry["pid"])
            assert len(executions) == 2  # two calls, each with its own key
            for pids in executions.values():
                # Only an execution interrupted by a kill is repeated, by another process.
                assert all(pid in killed for pid in pids[:-1]), (sid, pids, killed)
                repeated += len(pids) - 1
        assert repeated <= 2 * 6  # at most what the killed workers held
    finally:
        for client in clients:
            client.close()
    assert steady.process is not None


def _owns_a_run(env: Env, worker: LiveServer, runs: list[tuple[str, str]]) -> bool:
    """Whether `worker` is in the middle of a tool of some run."""
    assert worker.process is not None
    pid = worker.process.pid
    return any(
        e["what"] == "tool" and e["pid"] == pid and time.time() - e["time"] < 0.3
        for sid, _ in runs
        for e in env.log(sid)
    )


def test_a_follower_on_another_replica_is_woken_by_the_running_replicas_publications(
    pg_env: Env,
) -> None:
    """A run a replica accepted itself publishes its events once another process follows it
    (FOLLOW_CHANNEL): the follower reads on when told, not on its timer."""
    running = pg_env.server("a")
    following = pg_env.server("b")
    assert running.process is not None
    with httpx.Client(base_url=running.url, timeout=30) as http:
        iid = _start(http, "s1")
    _wait_for_slow_step(pg_env, "s1", running.process.pid)
    with httpx.Client(base_url=following.url, timeout=30) as http:
        url = f"{_base('s1')}/invocations/{iid}/events"
        with http.stream("GET", url, params={"afterSeq": 0}) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            first = next(iter_sse(lines))
            assert first.event != "done"
            pg_env.open_gate("s1")
            frames = [first, *iter_sse(lines)]
        assert frames[-1].event == "done"
        stored = _events(http, "s1")
        assert [f.id for f in frames[:-1]] == [str(e["seq"]) for e in stored]
        wakeups = metric_samples(http, "agentd_follow_wakeups_total")
        assert wakeups.get('cause="notification"', 0) >= 1
        assert wakeups.get('cause="timer"', 0) == 0


def test_an_answer_sent_to_the_api_replica_resumes_the_run_on_a_worker(pg_env: Env) -> None:
    """Human in the loop across the API/worker split: the worker's run waits for a confirmation;
    the answer posted to the API replica queues it again and a worker continues it."""
    api = pg_env.server("api", AGENTD_RUN_INVOCATIONS="false")
    worker = pg_env.worker("worker")
    assert worker.process is not None
    base = f"/apps/refund_agent/users/{USER}/sessions/s1"
    with httpx.Client(base_url=api.url, timeout=30) as http:
        assert http.post(f"/apps/refund_agent/users/{USER}/sessions", json={"sessionId": "s1"})
        started = http.post(
            f"{base}/invocations",
            json={
                "newMessage": {"role": "user", "parts": [{"text": "refund 150 for order A1"}]},
                "mode": "wait",
            },
        )
        assert started.status_code == 200, started.text
        invocation = started.json()["invocation"]
        assert invocation["status"] == "requires_action"
        (call,) = invocation["requiredAction"]["calls"]
        answered = http.post(
            f"{base}/invocations/{invocation['id']}/resume",
            json={"confirmations": [{"functionCallId": call["functionCallId"], "confirmed": True}]},
        )
        assert answered.status_code == 202, answered.text
        wait_until(
            lambda: (
                http.get(f"{base}/invocations/{invocation['id']}").json()["status"] == "completed"
            ),
            timeout=30,
        )
        final = http.get(f"{base}/invocations/{invocation['id']}").json()
        assert f":{worker.process.pid}:" in final["owner"]
        assert http.get(base).json()["state"]["refunds"] == [{"order": "A1", "amount": 150.0}]
