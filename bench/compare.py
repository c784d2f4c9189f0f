"""agentd against google-adk's `adk api_server`, side by side in one run (`make bench`).

Both servers run on 127.0.0.1 with logic-identical offline apps (bench/apps/*/capital_bench: a
deterministic model calls a tool that saves a 1 KB artifact and writes two state keys, then
answers) on SQLite and local files; one load driver drives both with the same workloads. agentd
runs as a deployment would (AGENTD_AUTH=api_key, limits on; the rate limit raised so the
benchmark's one principal is not throttled) and once more with AGENTD_AUTH=none. The ADK server
comes from a separate virtualenv (bench/.adk-venv, google-adk==2.13.0), never a dependency of
agentd. Prints one table (and `--json` for the raw figures).
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from bench.load import Bench, cpu_ms, rss_mib, run_body, timed  # noqa: E402
from tests.live_server import LiveServer  # noqa: E402
from tests.pgserver import start_postgres  # noqa: E402

APP = "capital_bench"
#: Headers a server is called with (None: no credentials).
Headers = dict[str, str] | None
ADK_VENV = PROJECT_ROOT / "bench" / ".adk-venv"
ADK_VERSION = "2.13.0"


class AdkServer(LiveServer):
    """`adk api_server` from the benchmark virtualenv."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, {})
        self.command = [
            str(ADK_VENV / "bin" / "adk"),
            "api_server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--session_service_uri",
            f"sqlite+aiosqlite:///{workdir / 'adk.db'}",
            "--artifact_service_uri",
            f"file://{workdir / 'artifacts'}",
            "--log_level",
            "warning",
            str(PROJECT_ROOT / "bench" / "apps" / "adk"),
        ]

    def start(self) -> "AdkServer":
        """Start `adk api_server` and wait for it to answer."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.command, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 120
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"adk exited:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/list-apps", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(self.log.read_text())
            time.sleep(0.1)


class CompareBench(Bench):
    """The issue's workloads on top of bench.load's."""

    async def history_reads(self, sid: str, repeats: int) -> dict[str, Any]:
        """GET session and latest artifact on the long session, and on a fresh one."""
        figures: dict[str, Any] = {}
        for name, path in [
            ("get_session_long", f"/apps/{self.app}/users/history/sessions/{sid}"),
            (
                "artifact_latest_long",
                f"/apps/{self.app}/users/history/sessions/{sid}/artifacts/notes.txt",
            ),
            # a short session: c16's first worker has ~13 turns
            (
                "artifact_latest_fresh",
                f"/apps/{self.app}/users/c16/sessions/w0/artifacts/notes.txt",
            ),
        ]:

            async def work(path: str = path) -> tuple[list[float], int]:
                latencies, errors = [], 0
                for _ in range(repeats):
                    latency, ok = await timed(self.http.get(path))
                    latencies.append(latency)
                    errors += not ok
                return latencies, errors

            figures[name] = await self.measure(work)
        return figures

    async def same_session(self, concurrency: int, user: str = "same") -> dict[str, Any]:
        """`concurrency` simultaneous /run on one session (agentd enqueues them: one at a time),
        counting each status code, and for scale one /run alone (the median of five on a session
        of its own): agentd's target is `concurrency` times one run plus 50 ms."""
        base = f"/apps/{self.app}/users/{user}/sessions"
        await self.http.post(base, json={"sessionId": "alone"})
        alone = [
            (await timed(self.http.post("/run", json=run_body(self.app, user, "alone", i))))[0]
            for i in range(5)
        ]
        one_run_ms = statistics.median(alone) * 1000
        await self.http.post(base, json={"sessionId": "one"})
        cpu_before = cpu_ms(self.pid)
        started = time.perf_counter()
        responses = await asyncio.gather(
            *(
                self.http.post("/run", json=run_body(self.app, user, "one", i))
                for i in range(concurrency)
            )
        )
        wall_ms = (time.perf_counter() - started) * 1000
        codes: dict[str, int] = {}
        for response in responses:
            codes[str(response.status_code)] = codes.get(str(response.status_code), 0) + 1
        return {
            "status_codes": codes,
            "wall_ms": round(wall_ms, 1),
            "one_run_ms": round(one_run_ms, 1),
            "target_ms": round(concurrency * one_run_ms + 50, 1),
            "server_cpu_ms": round(cpu_ms(self.pid) - cpu_before, 1),
        }

    async def warm_up(self) -> None:
        """A miniature of every workload, so one-time costs (imports, compiled statements, pool
        connections, first-use caches) are paid before the RSS baseline is read."""
        await self.create_sessions("warmup-create", 20)
        await self.runs("warmup", 16, 2)
        await self.http.get(f"/apps/{self.app}/users/warmup/sessions/w0")
        await self.http.get(f"/apps/{self.app}/users/warmup/sessions/w0/artifacts/notes.txt")
        await self.same_session(8, user="warmup-same")

    async def compare(self, args: argparse.Namespace) -> dict[str, Any]:
        """Every workload, warm-up first; RSS after warm-up, after each workload and at the end."""
        await self.warm_up()
        rss = {"after_warmup": round(rss_mib(self.pid), 1)}
        figures: dict[str, Any] = {}
        workloads: list[tuple[str, Callable[[], Awaitable[dict[str, Any]]]]] = [
            ("create", lambda: self.measure(lambda: self.create_sessions("creator", args.creates))),
            ("run_c1", lambda: self.measure(lambda: self.runs("c1", 1, args.turns_c1))),
            ("run_c16", lambda: self.measure(lambda: self.runs("c16", 16, args.turns_c16))),
            ("history", lambda: self.history(args.history)),
            ("reads", lambda: self.history_reads("h", args.repeats)),
            ("same_session_8", lambda: self.same_session(8)),
        ]
        for name, workload in workloads:
            result = await workload()
            if name == "reads":
                figures.update(result)
            else:
                figures[name] = result
            rss[f"after_{name}"] = round(rss_mib(self.pid), 1)
        figures["rss_mib"] = {
            **rss,
            "growth": round(rss["after_same_session_8"] - rss["after_warmup"], 1),
        }
        await self.http.aclose()
        return figures


def ensure_adk_venv() -> None:
    """Create bench/.adk-venv with google-adk if it is missing."""
    if (ADK_VENV / "bin" / "adk").exists():
        return
    subprocess.run([sys.executable, "-m", "venv", str(ADK_VENV)], check=True)
    subprocess.run(
        [
            str(ADK_VENV / "bin" / "pip"),
            "install",
            "-q",
            f"google-adk=={ADK_VERSION}",
            "aiosqlite",
            "sqlalchemy[asyncio]",  # ADK's database session service needs greenlet
        ],
        check=True,
    )


@contextmanager
def agentd_server(*, auth: bool, db: str = "sqlite") -> Iterator[tuple[LiveServer, Headers]]:
    """agentd with the bench app, and the headers to call it with; api keys + limits if `auth`."""
    with tempfile.TemporaryDirectory(prefix="agentd-bench-") as tmp:
        root = Path(tmp)
        env = {
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(PROJECT_ROOT / "bench" / "apps" / "agentd"),
            "AGENTD_ENQUEUE_TIMEOUT_SECONDS": "300",
            "AGENTD_RATE_LIMIT_PER_MINUTE": "1000000",
            "AGENTD_LOG_LEVEL": "WARNING",
        }
        postgres = None
        if db == "postgres":
            postgres = start_postgres()
            env["AGENTD_DATABASE_URL"] = postgres.create_database("bench")
        headers = None
        if auth:
            env["AGENTD_AUTH"] = "api_key"
            full = {**os.environ, **env}
            subprocess.run(
                [sys.executable, "-m", "app", "migrate"],
                env=full,
                cwd=root,
                check=True,
                capture_output=True,
            )
            token = subprocess.run(
                [sys.executable, "-m", "app", "keys", "create", "--name", "bench"],
                env=full,
                cwd=root,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            headers = {"Authorization": f"Bearer {token}"}
        server = LiveServer(root, env).start()
        try:
            yield server, headers
        finally:
            server.stop()
            if postgres is not None:
                postgres.stop()


@contextmanager
def adk_server() -> Iterator[tuple[LiveServer, Headers]]:
    """ADK's api_server with the bench app (no credentials)."""
    ensure_adk_venv()
    with tempfile.TemporaryDirectory(prefix="adk-bench-") as tmp:
        server = AdkServer(Path(tmp)).start()
        try:
            yield server, None
        finally:
            server.stop()


def run_agentd(args: argparse.Namespace, *, auth: bool, db: str = "sqlite") -> dict[str, Any]:
    """Every workload on agentd; api keys + limits unless `auth` is False."""
    with agentd_server(auth=auth, db=db) as (server, headers):
        return asyncio.run(CompareBench(server, app=APP, headers=headers).compare(args))


def run_adk(args: argparse.Namespace) -> dict[str, Any]:
    """Every workload on ADK's api_server."""
    with adk_server() as (server, headers):
        return asyncio.run(CompareBench(server, app=APP, headers=headers).compare(args))


async def alternating_creates(
    servers: dict[str, tuple[LiveServer, Headers]], rounds: int, count: int
) -> dict[str, dict[str, Any]]:
    """Sequential creates in rounds that alternate between the servers, all alive at once.

    The per-server runs are minutes apart, and this machine's speed drifts by tens of percent
    over minutes; alternating rounds of `count` creates puts any drift on every server alike,
    so the ratio of their CPU per create is steadier than the one of the `create` row.
    """
    benches = {name: CompareBench(s, app=APP, headers=h) for name, (s, h) in servers.items()}
    cpu = dict.fromkeys(benches, 0.0)
    errors = dict.fromkeys(benches, 0)
    for bench in benches.values():
        await bench.create_sessions("alternating-warmup", min(count, 20))
    for round_ in range(rounds):
        for name, bench in benches.items():
            before = cpu_ms(bench.pid)
            _, failed = await bench.create_sessions(f"alternating{round_}", count)
            cpu[name] += cpu_ms(bench.pid) - before
            errors[name] += failed
    for bench in benches.values():
        await bench.http.aclose()
    return {
        name: {
            "server_cpu_ms_per_req": round(cpu[name] / (rounds * count), 2),
            "requests": rounds * count,
            "errors": errors[name],
        }
        for name in benches
    }


def run_alternating_creates(args: argparse.Namespace, *, adk: bool) -> dict[str, dict[str, Any]]:
    """`alternating_creates` on agentd (api keys) and, unless `adk` is False, ADK."""
    with ExitStack() as stack:
        servers = {"agentd": stack.enter_context(agentd_server(auth=True))}
        if adk:
            servers = {"adk": stack.enter_context(adk_server()), **servers}
        else:
            servers["agentd_auth_none"] = stack.enter_context(agentd_server(auth=False))
        rounds = args.alternating_rounds
        return asyncio.run(alternating_creates(servers, rounds, max(1, args.creates // rounds)))


ROWS = [
    ("create", "server_cpu_ms_per_req"),
    ("create_alternating", "server_cpu_ms_per_req"),
    ("create", "p50_ms"),
    ("run_c1", "server_cpu_ms_per_req"),
    ("run_c1", "p50_ms"),
    ("run_c1", "p99_ms"),
    ("run_c16", "req_per_s"),
    ("run_c16", "p50_ms"),
    ("run_c16", "p99_ms"),
    ("run_c16", "errors"),
    ("history", "run_ms_at_turn_10"),
    ("history", "run_ms_at_turn_100"),
    ("history", "run_ms_at_turn_250"),
    ("history", "run_ms_at_turn_500"),
    ("history", "get_session_ms_at_turn_10"),
    ("history", "get_session_ms_at_turn_500"),
    ("history", "server_cpu_ms_per_req"),
    ("get_session_long", "p50_ms"),
    ("artifact_latest_long", "p50_ms"),
    ("artifact_latest_fresh", "p50_ms"),
    ("artifact_latest_long", "errors"),
    ("artifact_latest_fresh", "errors"),
    ("same_session_8", "wall_ms"),
    ("same_session_8", "one_run_ms"),
    ("same_session_8", "target_ms"),
    ("rss_mib", "after_warmup"),
    ("rss_mib", "after_run_c16"),
    ("rss_mib", "after_history"),
    ("rss_mib", "after_same_session_8"),
    ("rss_mib", "growth"),
]


def table(columns: dict[str, dict[str, Any]]) -> str:
    """A Markdown table: one row per figure, one column per server, ratio agentd/ADK."""
    names = list(columns)
    lines = [
        "| workload | figure | " + " | ".join(names) + " | agentd / ADK |",
        "|---|---|" + "---|" * (len(names) + 1),
    ]
    for workload, figure in ROWS:
        values = [columns[n].get(workload, {}).get(figure) for n in names]
        ratio = ""
        if "adk" in columns and "agentd" in columns:
            ours, theirs = (
                columns["agentd"].get(workload, {}).get(figure),
                columns["adk"].get(workload, {}).get(figure),
            )
            if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and theirs:
                ratio = f"{ours / theirs:.2f}"
        lines.append(
            f"| {workload} | {figure} | "
            + " | ".join("" if v is None else str(v) for v in values)
            + f" | {ratio} |"
        )
    codes = [columns[n].get("same_session_8", {}).get("status_codes") for n in names]
    lines.append("| same_session_8 | status codes | " + " | ".join(map(str, codes)) + " |  |")
    return "\n".join(lines)


def main() -> None:
    """Parse arguments, run every server, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    # 1,000: the server CPU figure comes from /proc in 10 ms ticks, and 200 creates (~0.16 s of
    # agentd CPU) read only to +-0.05 ms per request, ~6% of the figure itself.
    parser.add_argument("--creates", type=int, default=1000)
    parser.add_argument(
        "--alternating-rounds",
        type=int,
        default=5,
        help="create_alternating: the creates again, in this many rounds alternating the servers",
    )
    parser.add_argument("--turns-c1", type=int, default=50)
    parser.add_argument("--turns-c16", type=int, default=13)
    parser.add_argument("--history", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--skip-adk", action="store_true")
    parser.add_argument("--postgres", action="store_true", help="also agentd on PostgreSQL")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    columns: dict[str, dict[str, Any]] = {}
    if not args.skip_adk:
        columns["adk"] = run_adk(args)
    columns["agentd"] = run_agentd(args, auth=True)
    columns["agentd_auth_none"] = run_agentd(args, auth=False)
    if args.postgres:
        columns["agentd_postgres"] = run_agentd(args, auth=True, db="postgres")
    for name, figures in run_alternating_creates(args, adk=not args.skip_adk).items():
        columns[name]["create_alternating"] = figures
    sys.stdout.write(table(columns) + "\n")
    if args.json:
        sys.stdout.write(json.dumps(columns, indent=2) + "\n")


if __name__ == "__main__":
    main()
