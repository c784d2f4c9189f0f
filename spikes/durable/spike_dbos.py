"""Spike: DBOS 3.4.0 against issue 19's needs (R1-R4), with real worker processes and `kill -9`.

Run from the repository root with the spike venv:
`spikes/.venv/bin/python -m spikes.durable.spike_dbos`.

What is used (public API unless said otherwise):
- a workflow `@DBOS.workflow(name="spike_task")` whose steps are `@DBOS.step()` (checkpointed);
- a partitioned queue, `DBOSClient.register_queue(name, partition_concurrency=1,
  worker_concurrency=N)`, the session id as `queue_partition_key`;
- enqueue from a separate producer process with `DBOSClient.enqueue({...})`;
- workers: `DBOS(config=...)` + `DBOS.launch()` inside a running event loop (async workflows run on
  it), each with its own `executor_id`;
- the system database created up front with `DBOS.migrate(url)`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import sys
import time
from typing import Any

from dbos import DBOS, DBOSClient, DBOSConfig

from spikes.durable import common
from spikes.durable.common import Scenario, Spike, StepLog

VERSION = "3.4.0"
APP = "agentd_spike"
WORKFLOW = "spike_task"
MODULE = "spikes.durable.spike_dbos"

LOG: StepLog | None = None


def log(ev: str, **fields: Any) -> None:
    if LOG is not None:
        LOG(ev, **fields)


# --------------------------------------------------------------------------- worker side


@DBOS.step(name="spike_step")
async def spike_step(task: str, i: int, step_s: float) -> int:
    log("step_start", task=task, i=i)
    await asyncio.sleep(step_s)
    log("step_end", task=task, i=i)
    return i


@DBOS.workflow(name=WORKFLOW)
async def spike_task(task: str, session: str, steps: int, step_s: float) -> str:
    log("start", task=task, session=session)
    for i in range(steps):
        await spike_step(task, i, step_s)
    log("end", task=task, session=session)
    return task


async def worker_main(db: str, executor_id: str) -> None:
    global LOG
    LOG = StepLog.for_process(f"worker-{executor_id}")
    config: DBOSConfig = {
        "name": APP,
        "system_database_url": db,
        "executor_id": executor_id,
        "application_version": "spike",
        "run_migrations": False,  # migrated once by the orchestrator (DBOS.migrate)
    }
    DBOS(config=config)
    DBOS.launch()  # on a running loop: dequeued async workflows run on this loop
    log("ready", executor_id=executor_id)
    await asyncio.Event().wait()


def produce(db: str, queue: str, tasks_file: str, interval_s: float) -> None:
    producer_log = StepLog.for_process("producer")
    client = DBOSClient(system_database_url=db, application_name=APP)
    try:
        for spec in common.paced(common.read_tasks(tasks_file), interval_s):
            producer_log("enqueue", task=spec["task"], session=spec["session"])
            client.enqueue(
                {
                    "workflow_name": WORKFLOW,
                    "queue_name": queue,
                    "workflow_id": spec["task"],
                    "queue_partition_key": spec["session"],
                },
                spec["task"],
                spec["session"],
                spec["steps"],
                spec["step_s"],
            )
            producer_log("enqueued", task=spec["task"])
    finally:
        client.destroy()


# --------------------------------------------------------------------------- orchestrator side


def prepare(
    db: str, queue: str, *, worker_concurrency: int | None, polling_interval_sec: float
) -> None:
    """Create the system schema and declare the partitioned queue (one running per session)."""
    DBOS.migrate(db)
    client = DBOSClient(system_database_url=db, application_name=APP)
    try:
        client.register_queue(
            queue,
            partition_concurrency=1,
            worker_concurrency=worker_concurrency,
            polling_interval_sec=polling_interval_sec,
        )
    finally:
        client.destroy()


def starters(db: str, queue: str) -> tuple[common.WorkerStarter, common.ProducerStarter]:
    def start_worker(sc: Scenario, name: str) -> Any:
        return sc.spawn(name, ["-m", MODULE, "worker", "--db", db, "--executor-id", name])

    def start_producer(sc: Scenario, tasks: list[dict[str, Any]], interval_s: float) -> Any:
        path = common.write_tasks(sc.dir / "tasks.json", tasks)
        argv = ["-m", MODULE, "produce", "--db", db, "--queue", queue, "--tasks", str(path)]
        return sc.spawn("producer", [*argv, "--interval", str(interval_s)])

    return start_worker, start_producer


def workflow_row(db: str, workflow_id: str) -> dict[str, Any] | None:
    """`recovery_attempts`, `status`, `executor_id` straight from DBOS's workflow_status table
    (WorkflowStatus does not expose the attempt counter)."""
    query = "SELECT status, executor_id, recovery_attempts FROM {t} WHERE workflow_uuid = ?"
    if db.startswith("sqlite"):
        with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
            row = conn.execute(query.format(t="workflow_status"), (workflow_id,)).fetchone()
    else:
        import psycopg

        with psycopg.connect(db) as conn:
            row = conn.execute(
                query.format(t="dbos.workflow_status").replace("?", "%s"), (workflow_id,)
            ).fetchone()
    if row is None:
        return None
    return {"status": row[0], "executor_id": row[1], "recovery_attempts": row[2]}


def r3_sqlite(spike: Spike) -> dict[str, Any]:
    """R3: the same worker code on a SQLite system database; SIGKILL the only worker during
    step 2 of a 6-step task, restart it (same executor id), and see what resumes."""
    sc = spike.scenario("r3_sqlite")
    db = f"sqlite:///{sc.dir / 'dbos_system.sqlite'}"
    queue = "invocations"
    prepare(db, queue, worker_concurrency=4, polling_interval_sec=1.0)
    start_worker, start_producer = starters(db, queue)
    start_worker(sc, "w1")
    sc.wait_ready(1)
    tasks = [
        {"task": "Q1", "session": "s1", "steps": 6, "step_s": 0.5},
        {"task": "Q2", "session": "s1", "steps": 1, "step_s": 0.3},
        {"task": "Q3", "session": "s2", "steps": 2, "step_s": 0.3},
    ]
    start_producer(sc, tasks, 0.0)
    hit = common.wait_for(
        lambda: sc.count("step_start", task="Q1", i=2) >= 1,
        30.0,
    )
    result: dict[str, Any] = {"backend": "SQLite " + sqlite3.sqlite_version}
    if not hit:
        sc.stop()
        return {**result, "error": "Q1 never reached step 2"}
    time.sleep(0.2)
    victim = sc.workers["w1"]
    sc.procs.kill9(victim)
    t_restart = time.time()
    start_worker(sc, "w1")  # the same executor id: DBOS recovers its PENDING workflows at launch

    def resumed() -> dict[str, Any] | None:
        return next(
            (
                e
                for e in sc.events()
                if e["ev"] == "start" and e.get("task") == "Q1" and e["pid"] != victim.pid
            ),
            None,
        )

    again = common.wait_for(resumed, 30.0)
    finished = sc.wait_ends(["Q1", "Q2", "Q3"], 30.0)
    row = workflow_row(db, "Q1")
    sc.stop()
    runs = common.task_runs(sc.events())
    steps = [e["i"] for e in sc.events() if e["ev"] == "step_start" and e.get("task") == "Q1"]
    q1_end = max((r.end for r in runs if r.task == "Q1" and r.end), default=None)
    q2 = [r for r in runs if r.task == "Q2"]
    q3 = [r for r in runs if r.task == "Q3" and r.end]
    return {
        **result,
        "supported": True,
        "resumed_after_restart": bool(again),
        "resume_s_after_restart_spawn": common.rnd(again["t"] - t_restart) if again else None,
        "finished": finished,
        "q1_step_executions": {str(i): steps.count(i) for i in range(6)},
        "completed_steps_redone": sorted(i for i in range(2) if steps.count(i) > 1),
        "q2_waited_for_q1": bool(q2 and q1_end and q2[0].start >= q1_end),
        "q3_other_session_done": bool(q3),
        "attempt_counter": row,
    }


def r1(spike: Spike) -> dict[str, Any]:
    """R1: 2 workers, worker_concurrency=4, the 12-task mix, default 1 s queue polling."""
    db = spike.database("dbos_r1")
    prepare(db, "invocations", worker_concurrency=4, polling_interval_sec=1.0)
    return common.scenario_r1(spike.scenario("r1"), *starters(db, "invocations"))


def r2(spike: Spike) -> dict[str, Any]:
    """R2: distinct executor ids w1, w2. DBOS has no liveness detection of its own, so the remedy
    is what a supervisor would do: start a new process with the dead worker's executor id."""
    db = spike.database("dbos_r2")
    prepare(db, "invocations", worker_concurrency=4, polling_interval_sec=1.0)
    _, start_producer = starters(db, "invocations")

    def start_worker_with_id(sc: Scenario, name: str) -> Any:
        executor_id = name.removesuffix("-restarted")
        argv = ["-m", MODULE, "worker", "--db", db, "--executor-id", executor_id]
        return sc.spawn(name, argv)

    def restart_same_executor_id(sc: Scenario, victim_name: str) -> str:
        start_worker_with_id(sc, f"{victim_name}-restarted")
        return (
            f"new worker process with the dead one's executor_id ({victim_name}); "
            "DBOS recovers that id's PENDING workflows at launch"
        )

    return common.scenario_r2(
        spike.scenario("r2"),
        start_worker_with_id,
        start_producer,
        remedy=restart_same_executor_id,
        read_attempts=lambda _sc: workflow_row(db, "L1"),
    )


def r4(
    spike: Spike, name: str, polling_interval_sec: float, worker_concurrency: int | None = 20
) -> dict[str, Any]:
    """R4: 100 zero-step tasks every 20 ms, 2 workers (worker_concurrency=20). Queues are polled
    (no NOTIFY on enqueue), so this runs at the default 1 s poll and at 0.1 s. One poll claims
    at most worker_concurrency tasks per worker, so the 1 s poll also runs without that cap."""
    db = spike.database(f"dbos_{name}")
    prepare(
        db,
        "latency",
        worker_concurrency=worker_concurrency,
        polling_interval_sec=polling_interval_sec,
    )
    return {
        "polling_interval_s": polling_interval_sec,
        "worker_concurrency": worker_concurrency,
        **common.scenario_r4(spike.scenario(name), *starters(db, "latency")),
    }


def body(spike: Spike) -> dict[str, Any]:
    logging.getLogger("dbos").setLevel(logging.WARNING)  # the orchestrator's own client calls
    pg = spike.postgres()
    return {
        "postgres": common.server_version(pg),
        "r1": spike.guard(lambda: r1(spike)),
        "r2": spike.guard(lambda: r2(spike)),
        "r3": spike.guard(lambda: r3_sqlite(spike)),
        "r4": spike.guard(lambda: r4(spike, "r4", 1.0)),
        "r4_fast": spike.guard(lambda: r4(spike, "r4_fast", 0.1)),
        "r4_uncapped": spike.guard(lambda: r4(spike, "r4_uncapped", 1.0, None)),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=MODULE)
    sub = parser.add_subparsers(dest="cmd")
    w = sub.add_parser("worker")
    w.add_argument("--db", required=True)
    w.add_argument("--executor-id", required=True)
    p = sub.add_parser("produce")
    p.add_argument("--db", required=True)
    p.add_argument("--queue", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--interval", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.cmd == "worker":
        asyncio.run(worker_main(args.db, args.executor_id))
        return 0
    if args.cmd == "produce":
        produce(args.db, args.queue, args.tasks, args.interval)
        return 0
    return common.run_spike("dbos", VERSION, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
