"""Spike: pgqueuer 1.6.0 against issue 19's needs (R1-R4), with real worker processes and `kill -9`.

Run from the repository root with the spike venv:
`spikes/.venv/bin/python -m spikes.durable.spike_pgqueuer`.

What is used (public API):
- `PgQueuer.from_asyncpg_connection(conn)`, a handler `@pgq.entrypoint("spike_task")`;
- `Queries.from_asyncpg_connection(conn).enqueue("spike_task", payload)` from a separate producer,
  `Queries.install()` for the schema;
- workers `pgq.run(batch_size=B, max_concurrent_tasks=2B, heartbeat_timeout=...,
  dequeue_timeout=...)`.

pgqueuer has no per-key concurrency (an entrypoint's `concurrency_limit` is global, `dedupe_key`
rejects a second job instead of queueing it), so R1 runs the mix with no key at all, and separately
counts what `dedupe_key=session` does to the same enqueues. Takeover of a dead worker's job is
built in (a stale heartbeat makes a `picked` job claimable again), but a worker only looks for
stale jobs when it dequeues, so R2 is run twice: with `dequeue_timeout=2 s` and with the default
30 s. There are no step checkpoints: a taken-over job runs its whole body again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pgqueuer
from pgqueuer import Job, PgQueuer, Queries

from spikes.durable import common
from spikes.durable.common import Scenario, Spike, StepLog

VERSION = "1.6.0"
MODULE = "spikes.durable.spike_pgqueuer"
HEARTBEAT_TIMEOUT_S = 6.0


async def worker_main(
    db: str, name: str, batch_size: int, heartbeat_timeout: float, dequeue_timeout: float
) -> None:
    log = StepLog.for_process(f"worker-{name}")
    conn = await asyncpg.connect(db)
    pgq = PgQueuer.from_asyncpg_connection(conn)

    @pgq.entrypoint("spike_task")
    async def spike_task(job: Job) -> None:
        spec = json.loads(job.payload or b"{}")
        task, session = spec["task"], spec["session"]
        log("start", task=task, session=session, attempt=job.attempts, job_id=job.id)
        for i in range(spec["steps"]):
            log("step_start", task=task, i=i)
            await asyncio.sleep(spec["step_s"])
            log("step_end", task=task, i=i)
        log("end", task=task, session=session)

    run = asyncio.create_task(
        pgq.run(
            batch_size=batch_size,
            max_concurrent_tasks=2 * batch_size,
            heartbeat_timeout=timedelta(seconds=heartbeat_timeout),
            dequeue_timeout=timedelta(seconds=dequeue_timeout),
        )
    )
    await asyncio.sleep(1.0)  # let it LISTEN and do its first dequeue
    log("ready", worker=name)
    await run


async def produce(db: str, tasks_file: str, interval_s: float) -> None:
    log = StepLog.for_process("producer")
    conn = await asyncpg.connect(db)
    try:
        queries = Queries.from_asyncpg_connection(conn)
        async for spec in common.apaced(common.read_tasks(tasks_file), interval_s):
            log("enqueue", task=spec["task"], session=spec["session"])
            await queries.enqueue("spike_task", json.dumps(spec).encode())
            log("enqueued", task=spec["task"])
    finally:
        await conn.close()


# --------------------------------------------------------------------------- orchestrator side


async def _install(db: str) -> None:
    conn = await asyncpg.connect(db)
    try:
        await Queries.from_asyncpg_connection(conn).install()
    finally:
        await conn.close()


async def _dedupe_check(db: str) -> dict[str, Any]:
    """What `dedupe_key=session` does to R1's 12 enqueues (no worker running)."""
    conn = await asyncpg.connect(db)
    try:
        queries = Queries.from_asyncpg_connection(conn)
        ids = [
            await queries.enqueue(
                "spike_task",
                json.dumps(spec).encode(),
                dedupe_key=spec["session"],
                on_conflict="skip",
            )
            for spec in common.r1_mix()
        ]
    finally:
        await conn.close()
    skipped = sum(1 for batch in ids for job_id in batch if job_id is None)
    return {
        "enqueues": len(ids),
        "skipped_as_duplicates": skipped,
        "meaning": "dedupe_key rejects a second job of a session instead of queueing it",
    }


async def _attempts(db: str) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(db)
    try:
        live = await conn.fetch(
            "SELECT id, status::text AS status, attempts FROM pgqueuer ORDER BY id"
        )
        logged = await conn.fetch(
            "SELECT job_id, status::text AS status FROM pgqueuer_log ORDER BY id"
        )
    finally:
        await conn.close()
    return [
        *({"table": "pgqueuer", **dict(r)} for r in live),
        *({"table": "pgqueuer_log", **dict(r)} for r in logged),
    ]


def starters(
    db: str, batch_size: int, dequeue_timeout: float
) -> tuple[common.WorkerStarter, common.ProducerStarter]:
    def start_worker(sc: Scenario, name: str) -> Any:
        argv = ["-m", MODULE, "worker", "--db", db, "--name", name]
        argv += ["--batch-size", str(batch_size), "--heartbeat-timeout", str(HEARTBEAT_TIMEOUT_S)]
        return sc.spawn(name, [*argv, "--dequeue-timeout", str(dequeue_timeout)])

    def start_producer(sc: Scenario, tasks: list[dict[str, Any]], interval_s: float) -> Any:
        path = common.write_tasks(sc.dir / "tasks.json", tasks)
        argv = ["-m", MODULE, "produce", "--db", db, "--tasks", str(path)]
        return sc.spawn("producer", [*argv, "--interval", str(interval_s)])

    return start_worker, start_producer


def r3_postgres_only() -> dict[str, Any]:
    from pgqueuer.adapters.persistence.qb import QueryBuilderEnvironment

    ddl = QueryBuilderEnvironment().build_install_query()
    driver_dir = Path(pgqueuer.__file__).parent / "adapters" / "drivers"
    drivers = sorted(p.stem for p in driver_dir.glob("*.py"))
    return {
        "supported": False,
        "why": "PostgreSQL only: the drivers are asyncpg and psycopg (plus an in-memory driver "
        "that keeps nothing on disk); the install DDL is PL/pgSQL, an enum and a NOTIFY trigger",
        "driver_modules": [d for d in drivers if d != "__init__"],
        "install_plpgsql_functions": ddl.count("LANGUAGE plpgsql"),
        "install_triggers": ddl.count("CREATE TRIGGER") + ddl.count("CREATE OR REPLACE TRIGGER"),
        "install_pg_notify_calls": ddl.count("pg_notify("),
    }


def r1(spike: Spike) -> dict[str, Any]:
    """R1: batch_size 2 -> max_concurrent_tasks 4 per worker (the library requires >= 2 x batch);
    no key, since there is no per-key limit to give."""
    db = spike.database("pgqueuer_r1")
    asyncio.run(_install(db))
    return common.scenario_r1(spike.scenario("r1"), *starters(db, 2, 30.0))


def r1_dedupe(spike: Spike) -> dict[str, Any]:
    db = spike.database("pgqueuer_r1_dedupe")
    asyncio.run(_install(db))
    return asyncio.run(_dedupe_check(db))


def r2(spike: Spike, name: str, dequeue_timeout: float, window: float) -> dict[str, Any]:
    """R2: the built-in takeover (stale heartbeat re-picked at the next dequeue)."""
    db = spike.database(f"pgqueuer_{name}")
    asyncio.run(_install(db))
    result = common.scenario_r2(
        spike.scenario(name),
        *starters(db, 2, dequeue_timeout),
        window=window,
        read_attempts=lambda _sc: asyncio.run(_attempts(db)),
    )
    result["settings"] = (
        f"heartbeat_timeout={HEARTBEAT_TIMEOUT_S:g}s dequeue_timeout={dequeue_timeout:g}s"
    )
    return result


def r4(spike: Spike) -> dict[str, Any]:
    """R4: batch_size 10 -> max_concurrent_tasks 20 per worker."""
    db = spike.database("pgqueuer_r4")
    asyncio.run(_install(db))
    return common.scenario_r4(spike.scenario("r4"), *starters(db, 10, 30.0))


def body(spike: Spike) -> dict[str, Any]:
    pg = spike.postgres()
    return {
        "postgres": common.server_version(pg),
        "r1": spike.guard(lambda: r1(spike)),
        "r1_dedupe": spike.guard(lambda: r1_dedupe(spike)),
        "r2": spike.guard(lambda: r2(spike, "r2", 2.0, common.TAKEOVER_WINDOW_S)),
        # the default dequeue_timeout (30 s): a longer window, or the takeover cannot be seen
        "r2_default": spike.guard(lambda: r2(spike, "r2_default", 30.0, 40.0)),
        "r3": r3_postgres_only(),
        "r4": spike.guard(lambda: r4(spike)),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=MODULE)
    sub = parser.add_subparsers(dest="cmd")
    w = sub.add_parser("worker")
    w.add_argument("--db", required=True)
    w.add_argument("--name", required=True)
    w.add_argument("--batch-size", type=int, default=2)
    w.add_argument("--heartbeat-timeout", type=float, default=HEARTBEAT_TIMEOUT_S)
    w.add_argument("--dequeue-timeout", type=float, default=30.0)
    p = sub.add_parser("produce")
    p.add_argument("--db", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--interval", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.cmd == "worker":
        asyncio.run(
            worker_main(
                args.db, args.name, args.batch_size, args.heartbeat_timeout, args.dequeue_timeout
            )
        )
        return 0
    if args.cmd == "produce":
        asyncio.run(produce(args.db, args.tasks, args.interval))
        return 0
    return common.run_spike("pgqueuer", VERSION, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
