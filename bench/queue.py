"""The invocation queue on PostgreSQL: claim latency and background-run throughput, with 1 and
2 `agentd worker` processes (issue 19). `python -m bench.queue` prints one table.

One API replica with AGENTD_RUN_INVOCATIONS=false queues every invocation; workers claim them
(woken by NOTIFY). Each invocation is the offline bench app's whole turn (a scripted model
calls a tool that saves a 1 KB artifact and writes state, then answers), each on its own
session. Two workloads per worker count:

- paced: `--paced` invocations created one every `--interval` seconds; claim latency is the
  invocation's start time minus its create time (both stamped by the database's clients on one
  machine), p50 / p99;
- burst: `--burst` invocations created as fast as 16 concurrent clients can; throughput is
  invocations / (last end time - first create time).

Everything runs on this machine (PostgreSQL, the API, the workers and the load), so figures
are for comparing, not capacity.
"""

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from tests.live_server import LiveServer, WorkerProcess  # noqa: E402
from tests.pgserver import start_postgres  # noqa: E402

APP = "capital_bench"
MESSAGE = {"role": "user", "parts": [{"text": "What is the capital of France?"}]}


@contextmanager
def deployment(workers: int) -> Iterator[LiveServer]:
    """PostgreSQL, one API-only replica and `workers` workers; yields the API."""
    postgres = start_postgres()
    processes: list[LiveServer] = []
    try:
        with tempfile.TemporaryDirectory(prefix="agentd-queue-bench-") as tmp:
            root = Path(tmp)
            env = {
                "AGENTD_DATA_DIR": str(root / "data"),
                "AGENTD_AGENTS_DIR": str(PROJECT_ROOT / "bench" / "apps" / "agentd"),
                "AGENTD_DATABASE_URL": postgres.create_database("queue"),
                "AGENTD_RATE_LIMIT_PER_MINUTE": "1000000",
                "AGENTD_LOG_LEVEL": "WARNING",
            }
            api = LiveServer(root / "api", {**env, "AGENTD_RUN_INVOCATIONS": "false"}).start()
            processes.append(api)
            for n in range(workers):
                worker_env = {**env, "AGENTD_LOG_LEVEL": "INFO"}
                processes.append(WorkerProcess(root / f"worker-{n}", worker_env).start())
            yield api
    finally:
        for process in processes:
            process.stop()
        postgres.stop()


async def _create(client: httpx.AsyncClient, sid: str) -> str:
    created = await client.post(f"/apps/{APP}/users/u/sessions", json={"sessionId": sid})
    created.raise_for_status()
    started = await client.post(
        f"/apps/{APP}/users/u/sessions/{sid}/invocations",
        json={"newMessage": MESSAGE, "mode": "background"},
    )
    started.raise_for_status()
    invocation_id: str = started.json()["id"]
    return invocation_id


async def _finished(client: httpx.AsyncClient, runs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Every run's invocation once all have ended (polled; the bench's own load is small)."""
    deadline = time.monotonic() + 300
    pending = dict(runs)
    done: list[dict[str, Any]] = []
    while pending:
        for sid, iid in list(pending.items()):
            body = (
                await client.get(f"/apps/{APP}/users/u/sessions/{sid}/invocations/{iid}")
            ).json()
            if body["status"] not in ("queued", "running"):
                done.append(body)
                del pending[sid]
        if pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(pending)} invocations did not end")
            await asyncio.sleep(0.1)
    return done


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def paced(url: str, count: int, interval: float, tag: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        runs = []
        for n in range(count):
            sid = f"{tag}-{n}"
            runs.append((sid, await _create(client, sid)))
            await asyncio.sleep(interval)
        done = await _finished(client, runs)
    latency = [(d["startTime"] - d["createTime"]) * 1000 for d in done]
    return {
        "claim_p50_ms": round(statistics.median(latency), 1),
        "claim_p99_ms": round(_percentile(latency, 0.99), 1),
        "completed": sum(d["status"] == "completed" for d in done),
        "count": count,
    }


async def burst(url: str, count: int, tag: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        queue = list(range(count))
        runs: list[tuple[str, str]] = []

        async def producer() -> None:
            while queue:
                sid = f"{tag}-{queue.pop()}"
                runs.append((sid, await _create(client, sid)))

        await asyncio.gather(*(producer() for _ in range(16)))
        done = await _finished(client, runs)
    first = min(d["createTime"] for d in done)
    last = max(d["endTime"] for d in done)
    latency = [(d["startTime"] - d["createTime"]) * 1000 for d in done]
    return {
        "runs_per_s": round(count / (last - first), 1),
        "claim_p50_ms": round(statistics.median(latency), 1),
        "claim_p99_ms": round(_percentile(latency, 0.99), 1),
        "completed": sum(d["status"] == "completed" for d in done),
        "count": count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--paced", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--burst", type=int, default=400)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rows = []
    for workers in args.workers:
        with deployment(workers) as api:
            asyncio.run(paced(api.url, 10, args.interval, "warm"))  # imports, plans, pools
            paced_figures = asyncio.run(paced(api.url, args.paced, args.interval, "paced"))
            burst_figures = asyncio.run(burst(api.url, args.burst, "burst"))
        rows.append((workers, paced_figures, burst_figures))
    lines = [
        "| workers | paced: claim p50 ms | paced: claim p99 ms | paced completed "
        "| burst: runs/s | burst: claim p50 ms | burst: claim p99 ms | burst completed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for workers, p, b in rows:
        lines.append(
            f"| {workers} | {p['claim_p50_ms']} | {p['claim_p99_ms']} | "
            f"{p['completed']}/{p['count']} | {b['runs_per_s']} | {b['claim_p50_ms']} | "
            f"{b['claim_p99_ms']} | {b['completed']}/{b['count']} |"
        )
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
