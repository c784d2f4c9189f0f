"""Spike: procrastinate 3.10.0 against issue 19's needs (R1-R4), with real worker processes and
`kill -9`.

Run from the repository root with the spike venv:
`spikes/.venv/bin/python -m spikes.durable.spike_procrastinate`.

What is used (public API):
- `App(connector=PsycopgConnector(conninfo=...))`, a task `@app.task(name=..., pass_context=True)`;
- the session id as the job's `lock` (`task.configure(lock=session).defer_async(...)`): a job is
  not fetched while another job with the same lock is `doing` or an older one is `todo`;
- workers `app.run_worker_async(concurrency=N, update_heartbeat_interval=2,
  stalled_worker_timeout=6)`; other settings at their defaults (fallback poll 5 s);
- the schema from `app.schema_manager.apply_schema_async()`;
- R2's remedy: the documented stalled-jobs recipe, `job_manager.get_stalled_jobs(
  seconds_since_heartbeat=...)` then `job_manager.retry_job(job)`.

A job has no step checkpoints: a retried job runs its whole body again.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import procrastinate

from spikes.durable import common
from spikes.durable.common import Scenario, Spike, StepLog

VERSION = "3.10.0"
MODULE = "spikes.durable.spike_procrastinate"
HEARTBEAT_S = 2.0
STALLED_S = 6.0


def make_app(db: str, log: StepLog | None = None) -> tuple[procrastinate.App, Any]:
    # `python -m` makes this module __main__, which procrastinate warns about; the task is found
    # by its explicit name, so the warning does not apply here.
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=db))

    @app.task(name="spike_task", pass_context=True)
    async def spike_task(
        context: procrastinate.JobContext, task: str, session: str, steps: int, step_s: float
    ) -> None:
        assert log is not None
        log("start", task=task, session=session, attempt=context.job.attempts)
        for i in range(steps):
            log("step_start", task=task, i=i)
            await asyncio.sleep(step_s)
            log("step_end", task=task, i=i)
        log("end", task=task, session=session)

    return app, spike_task


async def worker_main(db: str, name: str, concurrency: int) -> None:
    log = StepLog.for_process(f"worker-{name}")
    app, _ = make_app(db, log)
    async with app.open_async():
        worker = asyncio.create_task(
            app.run_worker_async(
                name=name,
                concurrency=concurrency,
                update_heartbeat_interval=HEARTBEAT_S,
                stalled_worker_timeout=STALLED_S,
            )
        )
        await asyncio.sleep(1.0)  # let it register and LISTEN
        log("ready", worker=name)
        await worker


async def produce(db: str, tasks_file: str, interval_s: float) -> None:
    log = StepLog.for_process("producer")
    app, spike_task = make_app(db)
    async with app.open_async():
        async for spec in common.apaced(common.read_tasks(tasks_file), interval_s):
            log("enqueue", task=spec["task"], session=spec["session"])
            await spike_task.configure(lock=spec["session"]).defer_async(
                task=spec["task"],
                session=spec["session"],
                steps=spec["steps"],
                step_s=spec["step_s"],
            )
            log("enqueued", task=spec["task"])


# --------------------------------------------------------------------------- orchestrator side


async def _apply_schema(db: str) -> None:
    app, _ = make_app(db)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def _retry_stalled(db: str) -> int:
    app, _ = make_app(db)
    async with app.open_async():
        stalled = list(await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_S))
        for job in stalled:
            await app.job_manager.retry_job(job)
    return len(stalled)


async def _attempts(db: str) -> list[dict[str, Any]]:
    app, _ = make_app(db)
    async with app.open_async():
        rows = await app.connector.execute_query_all_async(
            "SELECT id, status::text AS status, attempts, args->>'task' AS task "
            "FROM procrastinate_jobs ORDER BY id"
        )
    return [dict(r) for r in rows]


def starters(db: str, concurrency: int) -> tuple[common.WorkerStarter, common.ProducerStarter]:
    def start_worker(sc: Scenario, name: str) -> Any:
        argv = ["-m", MODULE, "worker", "--db", db, "--name", name]
        return sc.spawn(name, [*argv, "--concurrency", str(concurrency)])

    def start_producer(sc: Scenario, tasks: list[dict[str, Any]], interval_s: float) -> Any:
        path = common.write_tasks(sc.dir / "tasks.json", tasks)
        argv = ["-m", MODULE, "produce", "--db", db, "--tasks", str(path)]
        return sc.spawn("producer", [*argv, "--interval", str(interval_s)])

    return start_worker, start_producer


def r3_postgres_only() -> dict[str, Any]:
    """R3 is not testable: record why (what the package ships)."""
    pkg = Path(procrastinate.__file__).parent
    schema = (pkg / "sql" / "schema.sql").read_text()
    found = [*pkg.glob("*_connector.py"), *pkg.glob("contrib/**/*_connector.py")]
    connectors = sorted(str(p.relative_to(pkg).with_suffix("")) for p in found)
    return {
        "supported": False,
        "why": "PostgreSQL only: every shipped connector is a PostgreSQL driver; "
        "the schema is PL/pgSQL functions, triggers and LISTEN/NOTIFY; "
        "testing.InMemoryConnector keeps nothing on disk",
        "connector_modules": connectors,
        "schema_plpgsql_functions": schema.count("LANGUAGE plpgsql"),
        "schema_triggers": schema.count("CREATE TRIGGER"),
        "schema_uses_skip_locked": "SKIP LOCKED" in schema,
        "schema_pg_notify_calls": schema.count("pg_notify("),
    }


def r1(spike: Spike) -> dict[str, Any]:
    """R1: 2 workers of concurrency 4, the 12-task mix, `lock=session`."""
    db = spike.database("procrastinate_r1")
    asyncio.run(_apply_schema(db))
    return common.scenario_r1(spike.scenario("r1"), *starters(db, 4), timeout=120.0)


def r2(spike: Spike) -> dict[str, Any]:
    """R2: heartbeats every 2 s, workers pruned after 6 s; requeueing is application code."""
    db = spike.database("procrastinate_r2")
    asyncio.run(_apply_schema(db))

    def retry_stalled(_sc: Scenario, _victim_name: str) -> str:
        n = asyncio.run(_retry_stalled(db))
        return (
            f"get_stalled_jobs(seconds_since_heartbeat={STALLED_S:g}) + retry_job: {n} job(s) "
            "requeued (application code; the worker only heartbeats and prunes dead workers)"
        )

    result = common.scenario_r2(
        spike.scenario("r2"),
        *starters(db, 4),
        remedy=retry_stalled,
        read_attempts=lambda _sc: asyncio.run(_attempts(db)),
    )
    result["settings"] = (
        f"update_heartbeat_interval={HEARTBEAT_S:g}s stalled_worker_timeout={STALLED_S:g}s"
    )
    return result


def r4(spike: Spike) -> dict[str, Any]:
    """R4: 2 workers of concurrency 20, each task its own lock."""
    db = spike.database("procrastinate_r4")
    asyncio.run(_apply_schema(db))
    return common.scenario_r4(spike.scenario("r4"), *starters(db, 20))


def body(spike: Spike) -> dict[str, Any]:
    pg = spike.postgres()
    return {
        "postgres": common.server_version(pg),
        "r1": spike.guard(lambda: r1(spike)),
        "r2": spike.guard(lambda: r2(spike)),
        "r3": r3_postgres_only(),
        "r4": spike.guard(lambda: r4(spike)),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=MODULE)
    sub = parser.add_subparsers(dest="cmd")
    w = sub.add_parser("worker")
    w.add_argument("--db", required=True)
    w.add_argument("--name", required=True)
    w.add_argument("--concurrency", type=int, default=4)
    p = sub.add_parser("produce")
    p.add_argument("--db", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--interval", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.cmd == "worker":
        asyncio.run(worker_main(args.db, args.name, args.concurrency))
        return 0
    if args.cmd == "produce":
        asyncio.run(produce(args.db, args.tasks, args.interval))
        return 0
    return common.run_spike("procrastinate", VERSION, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
