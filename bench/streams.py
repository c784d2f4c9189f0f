"""Many concurrent streamed invocations (issue 31): where does one server stop holding the 2 s
floor, and how does it degrade past that?

A closed-loop ladder: at each step, `--users` N clients each send `POST /run_sse` (`streaming:
true`) to bench/apps/streams/stream_bench, whose model streams 20 chunks over 2 s, read the 21
frames to the end, and send the next, for `--seconds` after a short ramp. One fresh
`agentd serve` per step (SQLite, `--workers`, default one per core), so a step never inherits
the last one's sessions or memory.

The load generator runs in its own processes (`--clients`), each an asyncio loop of raw HTTP/1.1
connections (one per stream, `Connection: close`): no HTTP library between it and the socket,
so it costs little, and its own CPU time is reported beside the server's. A client told 503
waits its `Retry-After` before it tries again, as a well-behaved client does.

Per step: streams completed per second, first chunk p50/p99 (from sending the request to the
first `data:` frame; the model's own first chunk comes at once), headers p99 (accept and
admission), latency p50/p99 (to the last frame), server CPU per completed stream (all server
processes, from /proc), the server's RSS at the end (sum), errors by kind, 503s (overload), and
the kernel's listen-queue overflows over the step (/proc/net/netstat ListenOverflows).

Run: `python -m bench.streams [--users 100,250,500,1000,2000,5000] [--seconds 10]
[--workers N] [--loop auto|asyncio|uvloop]`; prints a Markdown table and the figures as JSON.
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from tests.live_server import LiveServer  # noqa: E402
from tests.shipped_apps import link_apps  # noqa: E402

APP = "stream_bench"
FRAMES = 21
FLOOR_MS = 2000.0
LADDER = (100, 250, 500, 1000, 2000, 5000)
STREAM_APP = PROJECT_ROOT / "bench" / "apps" / "streams" / APP
#: A stream that has not ended after this long counts as an error (`timeout`).
STREAM_TIMEOUT_SECONDS = 60.0


# -- the load generator (runs in its own processes) -------------------------------------------


def _request(port: int, user: int) -> bytes:
    body = json.dumps(
        {
            "appName": APP,
            "userId": f"u{user}",
            "sessionId": f"s{user}",
            "newMessage": {"role": "user", "parts": [{"text": "stream please"}]},
            "streaming": True,
        }
    ).encode()
    head = (
        f"POST /run_sse HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _one_stream(port: int, user: int, record: list[dict[str, Any]]) -> None:
    """One streamed invocation on a connection of its own; its timings (or error) recorded."""
    sent = time.perf_counter()
    entry: dict[str, Any] = {"sent": sent}
    try:
        async with asyncio.timeout(STREAM_TIMEOUT_SECONDS):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(_request(port, user))
                head = await reader.readuntil(b"\r\n\r\n")
                entry["headers_ms"] = (time.perf_counter() - sent) * 1000
                status = int(head.split(b" ", 2)[1])
                if status != 200:
                    entry["error"] = "503" if status == 503 else f"http-{status}"
                    entry["retry_after"] = _retry_after(head)
                    return
                frames = 0
                tail = b""
                while True:
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    seen = (tail + chunk).count(b"\ndata:") + (tail + chunk).startswith(b"data:")
                    if seen and frames == 0:
                        entry["first_ms"] = (time.perf_counter() - sent) * 1000
                    frames += seen
                    tail = chunk[-5:]  # shorter than a marker: none is counted twice
                entry["frames"] = frames
                entry["latency_ms"] = (time.perf_counter() - sent) * 1000
                if frames < FRAMES:
                    entry["error"] = f"short-stream-{frames}"
            finally:
                writer.close()
    except TimeoutError:
        entry["error"] = "timeout"
    except (ConnectionError, OSError) as exc:
        entry["error"] = type(exc).__name__
    except asyncio.IncompleteReadError:
        entry["error"] = "closed-before-headers"
    finally:
        record.append(entry)


def _retry_after(head: bytes) -> float:
    """The Retry-After of a response head, in seconds (1 if it has none)."""
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"retry-after":
            return float(value.strip() or 1)
    return 1.0


async def _users(port: int, users: range, until: float) -> list[dict[str, Any]]:
    record: list[dict[str, Any]] = []

    async def loop(user: int) -> None:
        while time.perf_counter() < until:
            await _one_stream(port, user, record)
            if "retry_after" in record[-1]:  # a well-behaved client waits as it is told
                await asyncio.sleep(record[-1]["retry_after"])

    await asyncio.gather(*(loop(user) for user in users))
    return record


def _client_process(port: int, users: range, until_wall: float, out: Any) -> None:
    """A load-generator process: its users' records and its own CPU seconds."""
    until = time.perf_counter() + (until_wall - time.time())
    record = asyncio.run(_users(port, users, until))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.send({"record": record, "cpu_s": usage.ru_utime + usage.ru_stime})
    out.close()


# -- the server -----------------------------------------------------------------------------


def _server_pids(server: LiveServer) -> list[int]:
    assert server.process is not None
    pid = server.process.pid
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return [pid, *(int(child) for child in children)]


def _cpu_seconds(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _listen_overflows() -> int:
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=True))
            return int(table.get("ListenOverflows", 0))
    return 0


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))], 1)


def run_step(users: int, args: argparse.Namespace) -> dict[str, Any]:
    """One step of the ladder on a fresh server."""
    with tempfile.TemporaryDirectory(prefix="agentd-streams-") as tmp:
        root = Path(tmp)
        env = {
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(link_apps(root / "agents", [STREAM_APP])),
            "AGENTD_RATE_LIMIT_PER_MINUTE": "0",
            "AGENTD_LOG_LEVEL": "WARNING",
            "AGENTD_WORKERS": str(args.workers),
            "AGENTD_LOOP": args.loop,
        }
        if args.max_inflight:
            env["AGENTD_MAX_INFLIGHT_INVOCATIONS"] = str(args.max_inflight)
        server = LiveServer(root, env).start()
        try:
            pids = _server_pids(server)
            with httpx.Client(base_url=server.url, timeout=60) as http:
                for user in range(users):  # sessions first: the ladder measures streams
                    http.post(f"/apps/{APP}/users/u{user}/sessions", json={"sessionId": f"s{user}"})
            overflows_before = _listen_overflows()
            cpu_before = _cpu_seconds(pids)
            started = time.time()
            until = started + args.seconds
            clients = min(args.clients, users)
            share = -(-users // clients)
            pipes, processes = [], []
            for index in range(clients):
                receive, send = multiprocessing.Pipe(duplex=False)
                span = range(index * share, min(users, (index + 1) * share))
                process = multiprocessing.Process(
                    target=_client_process, args=(server.port, span, until, send)
                )
                process.start()
                pipes.append(receive)
                processes.append(process)
            results = [pipe.recv() for pipe in pipes]
            for process in processes:
                process.join()
            wall = time.time() - started
            server_cpu = _cpu_seconds(pids) - cpu_before
            rss = _rss_mib(pids)
            overflows = _listen_overflows() - overflows_before
        finally:
            server.stop()
    record = [entry for result in results for entry in result["record"]]
    ok = [entry for entry in record if "error" not in entry]
    errors = Counter(entry["error"] for entry in record if "error" in entry)
    first = [entry["first_ms"] for entry in ok if "first_ms" in entry]
    latency = [entry["latency_ms"] for entry in ok]
    headers = [entry["headers_ms"] for entry in record if "headers_ms" in entry]
    return {
        "users": users,
        "completed": len(ok),
        "completed_per_s": round(len(ok) / wall, 1),
        "first_chunk_p50_ms": _pct(first, 50),
        "first_chunk_p99_ms": _pct(first, 99),
        "headers_p99_ms": _pct(headers, 99),
        "latency_p50_ms": _pct(latency, 50),
        "latency_p99_ms": _pct(latency, 99),
        "server_cpu_ms_per_stream": round(server_cpu * 1000 / len(ok), 2) if ok else None,
        "server_rss_mib": round(rss, 1),
        "client_cpu_s": round(sum(result["cpu_s"] for result in results), 1),
        "errors": dict(errors - Counter({"503": errors.get("503", 0)})),
        "refused_503": errors.get("503", 0),
        "listen_overflows": overflows,
        "wall_s": round(wall, 1),
        "mean_latency_ms": round(statistics.fmean(latency), 1) if latency else None,
    }


COLUMNS = [
    "users",
    "completed_per_s",
    "first_chunk_p50_ms",
    "first_chunk_p99_ms",
    "headers_p99_ms",
    "latency_p50_ms",
    "latency_p99_ms",
    "server_cpu_ms_per_stream",
    "server_rss_mib",
    "client_cpu_s",
    "refused_503",
    "errors",
    "listen_overflows",
]


def table(steps: list[dict[str, Any]]) -> str:
    """The steps as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for step in steps:
        lines.append("| " + " | ".join(str(step.get(c, "")) for c in COLUMNS) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default=",".join(map(str, LADDER)))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=2, help="load-generator processes")
    parser.add_argument("--workers", type=int, default=0, help="server processes (0: cores)")
    parser.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto")
    parser.add_argument("--max-inflight", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    steps = []
    for users in (int(u) for u in args.users.split(",")):
        step = run_step(users, args)
        sys.stderr.write(json.dumps(step) + "\n")
        steps.append(step)
    sys.stdout.write(f"workers={args.workers or 'cores'} loop={args.loop} s={args.seconds}\n")
    sys.stdout.write(table(steps) + "\n")
    if args.json:
        sys.stdout.write(json.dumps(steps, indent=2) + "\n")


if __name__ == "__main__":
    main()
