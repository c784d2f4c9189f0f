"""Load benchmark: create-session + ADK /run with the offline capital agent, over real HTTP.

Starts `agentd serve` (SQLite by default, or a throwaway PostgreSQL server) on 127.0.0.1, then:
- `create`: sessions created one after the other;
- `run_c1` / `run_c16`: /run turns at concurrency 1 and 16 (each worker on its own session);
- `history`: one session grown to `--history` turns, with /run latency around turns 10, 100, 250
  and 500 (a window of 5 turns each) to show whether a turn gets slower as history grows.
Prints JSON: per workload requests, errors, req/s, p50/p99 ms, and server CPU ms per request
(utime+stime of the server process from /proc). Run: `python -m bench.load --db both`.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from tests.live_server import LiveServer  # noqa: E402
from tests.pgserver import PostgresServer, start_postgres  # noqa: E402

APP = "capital_agent"
COUNTRIES = ["France", "Germany", "Italy", "Spain", "Japan", "Canada"]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    """User + system CPU time of a process, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / CLOCK_TICKS


def rss_mib(pid: int) -> float:
    """Resident memory of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def summary(latencies: list[float], errors: int, wall: float, cpu: float) -> dict[str, Any]:
    """Figures of one workload."""
    ordered = sorted(latencies)
    count = len(ordered)

    def pct(p: float) -> float:
        return round(ordered[min(count - 1, int(p * count))] * 1000, 2) if count else 0.0

    return {
        "requests": count,
        "errors": errors,
        "req_per_s": round(count / wall, 1) if wall else 0.0,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "server_cpu_ms_per_req": round(cpu / count, 2) if count else 0.0,
    }


def run_body(app: str, user: str, session: str, turn: int) -> dict[str, Any]:
    """An ADK /run request asking for a capital."""
    country = COUNTRIES[turn % len(COUNTRIES)]
    return {
        "appName": app,
        "userId": user,
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"text": f"What is the capital of {country}?"}]},
    }


async def timed(request: Awaitable[httpx.Response]) -> tuple[float, bool]:
    """Latency in seconds of `request` (not started until awaited here), and its success."""
    started = time.perf_counter()
    response = await request
    return time.perf_counter() - started, response.status_code < 400


class Bench:
    """The workloads against one server."""

    def __init__(
        self,
        server: LiveServer,
        *,
        app: str = APP,
        headers: dict[str, str] | None = None,
        pid: int | None = None,
    ) -> None:
        self.server = server
        assert server.process is not None
        self.pid = pid or server.process.pid
        self.app = app
        self.http = httpx.AsyncClient(base_url=server.url, timeout=300, headers=headers)

    async def measure(
        self, work: Callable[[], Awaitable[tuple[list[float], int]]]
    ) -> dict[str, Any]:
        """Run `work` and summarise it with the server's CPU time."""
        cpu_before = cpu_ms(self.pid)
        started = time.perf_counter()
        latencies, errors = await work()
        wall = time.perf_counter() - started
        return summary(latencies, errors, wall, cpu_ms(self.pid) - cpu_before)

    async def create_sessions(self, user: str, count: int) -> tuple[list[float], int]:
        """Sequential creates."""
        latencies, errors = [], 0
        for i in range(count):
            latency, ok = await timed(
                self.http.post(
                    f"/apps/{self.app}/users/{user}/sessions", json={"sessionId": f"s{i}"}
                )
            )
            latencies.append(latency)
            errors += not ok
        return latencies, errors

    async def runs(self, user: str, workers: int, turns: int) -> tuple[list[float], int]:
        """`workers` concurrent sessions of `turns` /run each."""
        for w in range(workers):
            await self.http.post(
                f"/apps/{self.app}/users/{user}/sessions", json={"sessionId": f"w{w}"}
            )
        latencies: list[float] = []
        errors = 0

        async def worker(w: int) -> None:
            nonlocal errors
            for turn in range(turns):
                latency, ok = await timed(
                    self.http.post("/run", json=run_body(self.app, user, f"w{w}", turn))
                )
                latencies.append(latency)
                errors += not ok

        await asyncio.gather(*(worker(w) for w in range(workers)))
        return latencies, errors

    async def history(self, turns: int) -> dict[str, Any]:
        """One session grown to `turns` turns; latency around checkpoints."""
        user = "history"
        await self.http.post(f"/apps/{self.app}/users/{user}/sessions", json={"sessionId": "h"})
        checkpoints = [c for c in (10, 100, 250, 500) if c <= turns] or [turns]
        by_turn: dict[int, float] = {}
        errors = 0
        cpu_before = cpu_ms(self.pid)
        started = time.perf_counter()
        for turn in range(1, turns + 1):
            latency, ok = await timed(
                self.http.post("/run", json=run_body(self.app, user, "h", turn))
            )
            by_turn[turn] = latency
            errors += not ok
        wall = time.perf_counter() - started
        result = summary(list(by_turn.values()), errors, wall, cpu_ms(self.pid) - cpu_before)
        for checkpoint in checkpoints:
            window = [by_turn[t] for t in range(max(1, checkpoint - 4), checkpoint + 1)]
            result[f"run_ms_at_turn_{checkpoint}"] = round(statistics.median(window) * 1000, 2)
            get_latency, _ = await timed(self.http.get(f"/apps/{self.app}/users/{user}/sessions/h"))
            result[f"get_session_ms_at_turn_{checkpoint}"] = round(get_latency * 1000, 2)
        return result

    async def run_all(self, args: argparse.Namespace) -> dict[str, Any]:
        """Every workload, in order."""
        await self.runs("warmup", 2, 3)
        rss_before = rss_mib(self.pid)
        figures = {
            "create": await self.measure(lambda: self.create_sessions("creator", args.creates)),
            "run_c1": await self.measure(lambda: self.runs("c1", 1, args.turns_c1)),
            "run_c16": await self.measure(lambda: self.runs("c16", 16, args.turns_c16)),
            "history": await self.history(args.history),
        }
        figures["server_rss_mib"] = {
            "before": round(rss_before, 1),
            "after": round(rss_mib(self.pid), 1),
        }
        await self.http.aclose()
        return figures


def run(
    db: str,
    *,
    creates: int = 200,
    turns_c1: int = 100,
    turns_c16: int = 13,
    history: int = 500,
) -> dict[str, Any]:
    """Start a server on `db` (sqlite | postgres), run the workloads, stop it."""
    args = argparse.Namespace(
        creates=creates, turns_c1=turns_c1, turns_c16=turns_c16, history=history
    )
    postgres: PostgresServer | None = None
    with tempfile.TemporaryDirectory(prefix="agentd-load-") as tmp:
        env = {
            "AGENTD_DATA_DIR": str(Path(tmp) / "data"),
            "AGENTD_AGENTS_DIR": str(PROJECT_ROOT / "agents"),
            "AGENTD_ENQUEUE_TIMEOUT_SECONDS": "120",
            "AGENTD_RATE_LIMIT_PER_MINUTE": "0",
        }
        if db == "postgres":
            postgres = start_postgres()
            env["AGENTD_DATABASE_URL"] = postgres.create_database("bench")
        server = LiveServer(Path(tmp), env).start()
        try:
            return {"db": db, **asyncio.run(Bench(server).run_all(args))}
        finally:
            server.stop()
            if postgres is not None:
                postgres.stop()


def main() -> None:
    """Parse arguments, run, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--creates", type=int, default=200)
    parser.add_argument("--turns-c1", type=int, default=100)
    parser.add_argument("--turns-c16", type=int, default=13)
    parser.add_argument("--history", type=int, default=500)
    args = parser.parse_args()
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    results = [
        run(
            db,
            creates=args.creates,
            turns_c1=args.turns_c1,
            turns_c16=args.turns_c16,
            history=args.history,
        )
        for db in dbs
    ]
    sys.stdout.write(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
