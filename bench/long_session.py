"""Long sessions (issue 30): does a turn cost the same at turn 10,000 as at turn 100, is a GET of
a 250-turn session steady, and how much memory does the history cache hold per event?

Three measurements, nothing asserted:
1. `long`: one session of `--turns` ADK `/run` turns on a real server (`agentd serve`, SQLite
   unless `--db postgres`) against bench/apps/long_plain (a) and bench/apps/long_compacting (b,
   compaction every 20 invocations with overlap 1, when `app.apps.app.EventsCompactionConfig`
   exists). Each turn is a function call, its response and an answer, from an offline model
   that reports the size of the request it got. Around turns 100, 1,000, 2,500, 5,000 and
   10,000, a window of 20 turns gives the /run p50 and mean and the server CPU per turn (the
   server's threads' on-CPU time from /proc; a window of 20 holds exactly one compaction of
   (b)), then one probe turn gives the request's size (its JSON is encoded only on probe
   turns, outside the window).
2. `get_250`: a session of bench/apps/agentd/capital_bench grown to 250 turns, then 400
   sequential plain `GET /apps/{app}/users/{u}/sessions/{sid}` as ADK clients send it.
3. `cached_event_memory`: in process, a DatabaseSessionService on a temporary SQLite file with
   10,000 events appended as the runner appends them (user message, function call, function
   response with state and artifact deltas, answer); a new service (so an empty history cache),
   `get_session` once, and the tracemalloc bytes still held after the returned session is
   dropped, per event, beside the stored JSON bytes per event.

Run: `python -m bench.long_session [--turns N] [--db sqlite|postgres]`; prints a Markdown table
and the figures as JSON.
"""

import argparse
import asyncio
import gc
import importlib
import json
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from bench.load import cpu_ms  # noqa: E402
from tests.live_server import LiveServer  # noqa: E402
from tests.pgserver import PostgresServer, start_postgres  # noqa: E402
from tests.shipped_apps import link_apps  # noqa: E402

APPS = PROJECT_ROOT / "bench" / "apps"
PLAIN = "long_plain"
COMPACTING = "long_compacting"
CAPITAL = "capital_bench"
CHECKPOINTS = (100, 1_000, 2_500, 5_000, 10_000)
WINDOW = 20
PROBE = "[probe]"
COUNTRIES = ["France", "Germany", "Italy", "Spain", "Japan", "Canada"]
_CONTENTS = re.compile(r"contents=(\d+)")
_CHARS = re.compile(r"request_chars=(\d+)")


def compaction_available() -> bool:
    """Whether agentd has ADK's compaction API (issue 30) yet."""
    try:
        summarizers = importlib.import_module("app.apps.base_events_summarizer")
        apps = importlib.import_module("app.apps.app")
    except ImportError:
        return False
    return hasattr(apps, "EventsCompactionConfig") and hasattr(summarizers, "BaseEventsSummarizer")


def server_cpu_ms(pid: int) -> float:
    """CPU time of the process's live threads, in ms, to the nanosecond (schedstat).

    A 20-turn window of ~3 ms turns is ~60 ms of CPU: /proc/<pid>/stat's 10 ms ticks would read
    it to +-17 %, too coarse for a 20 % flatness target. Falls back to those ticks where the
    kernel has no schedstat.
    """
    try:
        return (
            sum(
                int((task / "schedstat").read_text().split()[0])
                for task in Path(f"/proc/{pid}/task").iterdir()
            )
            / 1e6
        )
    except (OSError, ValueError, IndexError):
        return cpu_ms(pid)


def ms(seconds: float) -> float:
    """Seconds as milliseconds, rounded for the table."""
    return round(seconds * 1000, 2)


def checkpoints(turns: int) -> list[int]:
    """The probe turns of a session of `turns` turns (the last turn if none fits)."""
    return [c for c in CHECKPOINTS if c <= turns] or [turns]


@contextmanager
def agentd(db: str, *, compaction: bool) -> Iterator[LiveServer]:
    """`agentd serve` with the long-session apps (long_compacting only if `compaction`) and
    capital_bench, on a throwaway SQLite file or PostgreSQL database."""
    postgres: PostgresServer | None = None
    with tempfile.TemporaryDirectory(prefix="agentd-long-") as tmp:
        root = Path(tmp)
        apps = [APPS / PLAIN, APPS / "agentd" / CAPITAL]
        if compaction:
            apps.append(APPS / COMPACTING)
        env = {
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(link_apps(root / "agents", apps)),
            "AGENTD_RATE_LIMIT_PER_MINUTE": "0",
            "AGENTD_LOG_LEVEL": "WARNING",
        }
        if db == "postgres":
            postgres = start_postgres()
            env["AGENTD_DATABASE_URL"] = postgres.create_database("bench")
        server = LiveServer(root, env).start()
        try:
            yield server
        finally:
            server.stop()
            if postgres is not None:
                postgres.stop()


class Driver:
    """Sequential requests to one server, with its CPU time from /proc."""

    def __init__(self, server: LiveServer) -> None:
        assert server.process is not None
        self.pid = server.process.pid
        self.log = server.log
        self.http = httpx.Client(base_url=server.url, timeout=300)
        self.errors: list[str] = []

    def create(self, app: str, user: str, sid: str) -> None:
        """Create the session."""
        self.http.post(f"/apps/{app}/users/{user}/sessions", json={"sessionId": sid})

    def turn(self, app: str, user: str, sid: str, turn: int, *, probe: bool = False) -> float:
        """One /run turn; its latency in seconds. The answer is kept in `self.answer`."""
        text = f"What is the capital of {COUNTRIES[turn % len(COUNTRIES)]}?"
        body = {
            "appName": app,
            "userId": user,
            "sessionId": sid,
            "newMessage": {
                "role": "user",
                "parts": [{"text": f"{text} {PROBE}" if probe else text}],
            },
        }
        started = time.perf_counter()
        response = self.http.post("/run", json=body)
        latency = time.perf_counter() - started
        self.answer = ""
        if response.status_code >= 400:
            self.errors.append(f"turn {turn}: {response.status_code} {response.text[:300]}")
            return latency
        for event in response.json():
            for part in (event.get("content") or {}).get("parts") or []:
                if part.get("text"):
                    self.answer = part["text"]
        return latency

    def long_session(self, app: str, turns: int) -> dict[str, Any]:
        """One session of `turns` turns; figures around each checkpoint."""
        user, sid = "long", "s"
        self.create(app, user, sid)
        marks = checkpoints(turns)
        windows = {cp: range(max(1, cp - WINDOW), cp) for cp in marks}
        starts = {w.start: cp for cp, w in windows.items() if len(w)}
        figures: dict[str, Any] = {"app": app, "turns": turns, "checkpoints": {}}
        latencies: list[float] = []
        cpu_before = 0.0
        started = time.perf_counter()
        for turn in range(1, turns + 1):
            if turn in starts:
                latencies, cpu_before = [], server_cpu_ms(self.pid)
            if turn in windows:
                window_cpu = server_cpu_ms(self.pid) - cpu_before
                self.turn(app, user, sid, turn, probe=True)
                contents = _CONTENTS.search(self.answer)
                chars = _CHARS.search(self.answer)
                figures["checkpoints"][turn] = {
                    "run_p50_ms": ms(statistics.median(latencies)) if latencies else None,
                    "run_mean_ms": ms(statistics.fmean(latencies)) if latencies else None,
                    "run_max_ms": ms(max(latencies)) if latencies else None,
                    "server_cpu_ms_per_turn": round(window_cpu / len(latencies), 3)
                    if latencies
                    else None,
                    "request_chars": int(chars.group(1)) if chars else None,
                    "contents": int(contents.group(1)) if contents else None,
                }
                sys.stderr.write(f"{app} turn {turn}: {figures['checkpoints'][turn]}\n")
                continue
            latencies.append(self.turn(app, user, sid, turn))
        figures["wall_s"] = round(time.perf_counter() - started, 1)
        figures["errors"] = len(self.errors)
        figures["first_errors"] = self.errors[:3]
        if self.errors:
            figures["server_errors"] = server_errors(self.log)
        figures["stored_events"] = self.event_count(app, user, sid)
        figures["flatness"] = flatness(app, figures["checkpoints"])
        return figures

    def event_count(self, app: str, user: str, sid: str) -> int | None:
        """How many events the session stores (its last seq)."""
        page = self.http.get(
            f"/apps/{app}/users/{user}/sessions/{sid}/events",
            params={"pageSize": 1, "order": "desc"},
        )
        if page.status_code >= 400:
            return None
        events = page.json().get("events") or []
        return int(events[0]["seq"]) if events else 0

    def get_distribution(self, turns: int, gets: int) -> dict[str, Any]:
        """A capital_bench session grown to `turns` turns, then `gets` plain GETs of it."""
        user, sid = "reader", "g"
        self.create(CAPITAL, user, sid)
        for turn in range(1, turns + 1):
            self.turn(CAPITAL, user, sid, turn)
        path = f"/apps/{CAPITAL}/users/{user}/sessions/{sid}"
        first = self.http.get(path)
        latencies, failed = [], 0
        cpu_before = server_cpu_ms(self.pid)
        for _ in range(gets):
            started = time.perf_counter()
            response = self.http.get(path)
            latencies.append(time.perf_counter() - started)
            failed += response.status_code >= 400
        cpu = server_cpu_ms(self.pid) - cpu_before
        ordered = sorted(latencies)
        median = statistics.median(ordered)

        def pct(p: float) -> float:
            return ms(ordered[min(len(ordered) - 1, int(p * len(ordered)))])

        return {
            "turns": turns,
            "events": len(first.json().get("events", [])) if first.status_code < 400 else None,
            "body_bytes": len(first.content),
            "gets": gets,
            "errors": failed,
            "p50_ms": ms(median),
            "p95_ms": pct(0.95),
            "p99_ms": pct(0.99),
            "max_ms": ms(ordered[-1]),
            "over_3x_median": sum(latency > 3 * median for latency in ordered),
            "server_cpu_ms_per_get": round(cpu / gets, 2),
        }


def server_errors(log: Path, keep: int = 3) -> list[str]:
    """The last line of the first few tracebacks the server logged (why turns failed)."""
    found: list[str] = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and record.get("exc_info"):
            found.append(str(record["exc_info"]).strip().splitlines()[-1])
        if len(found) == keep:
            break
    return found


def flatness(app: str, points: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Each figure at the last checkpoint over the same figure at the first, and issue 30's
    target 4 on them: with compaction, server CPU per turn and request size within 20 % from
    turn 100 to turn 10,000; without, `/run` within 1.3x."""
    if len(points) < 2:
        return {}
    first, last = min(points), max(points)
    ratios: dict[str, Any] = {"from_turn": first, "to_turn": last}
    for figure in ("server_cpu_ms_per_turn", "request_chars", "run_p50_ms", "run_mean_ms"):
        a, b = points[first].get(figure), points[last].get(figure)
        ratios[figure] = round(b / a, 2) if a and b is not None else None
    cpu, chars, run = (
        ratios["server_cpu_ms_per_turn"],
        ratios["request_chars"],
        ratios["run_p50_ms"],
    )
    if app == COMPACTING:
        flat = cpu is not None and chars is not None and max(cpu, chars) <= 1.2
        ratios["verdict"] = (
            f"{'flat' if flat else 'not flat'} (target: CPU and request within 20 %): "
            f"CPU {cpu}x, request {chars}x"
        )
    else:
        within = run is not None and run <= 1.3
        ratios["verdict"] = (
            f"/run {'within' if within else 'beyond'} 1.3x (target): {run}x (p50); "
            f"CPU {cpu}x, request {chars}x"
        )
    return ratios


def on_fresh_server(db: str, work: Callable[[Driver], dict[str, Any]]) -> dict[str, Any]:
    """`work` on a server of its own: no measurement pays for another's cached history (more
    live objects make every garbage collection of the server slower)."""
    with agentd(db, compaction=compaction_available()) as server:
        driver = Driver(server)
        try:
            return work(driver)
        finally:
            driver.http.close()


def server_measurements(db: str, turns: int, gets: int, get_turns: int) -> dict[str, Any]:
    """Both variants of the long session and the GET distribution."""
    figures: dict[str, Any] = {"db": db, "code": code_version()}
    figures["long_plain"] = progress(
        "long_plain", on_fresh_server(db, lambda d: d.long_session(PLAIN, turns))
    )
    figures["long_compacting"] = progress(
        "long_compacting",
        on_fresh_server(db, lambda d: d.long_session(COMPACTING, turns))
        if compaction_available()
        else "compaction: not available yet",
    )
    figures["get_250"] = progress(
        "get_250", on_fresh_server(db, lambda d: d.get_distribution(get_turns, gets))
    )
    return figures


def code_version() -> str:
    """The commit measured, marked `+local changes` when app/ differs from it."""

    def git(*args: str) -> str:
        found = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True)
        return found.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{commit}+local changes" if git("status", "--porcelain", "app") else commit


def progress(name: str, figures: Any) -> Any:
    """`figures`, also written to stderr at once (a long run that fails later keeps them)."""
    sys.stderr.write(f"{name}: {json.dumps(figures)}\n")
    return figures


# -- memory per cached event (in process) -------------------------------------------------


def turn_events(turn: int) -> list[Any]:
    """The four events of one capital turn, shaped as the runner appends them."""
    from google.genai import types

    from app.sessions.models import Event, EventActions, new_invocation_id

    invocation = new_invocation_id()
    country = COUNTRIES[turn % len(COUNTRIES)]
    call_id = f"adk-{uuid.uuid4()}"
    author = CAPITAL
    question = f"What is the capital of {country}?"
    call = types.FunctionCall(id=call_id, name="get_capital_city", args={"country": country})
    answer = types.FunctionResponse(
        id=call_id, name="get_capital_city", response={"result": f"{country} capital"}
    )
    return [
        Event(
            author="user",
            invocation_id=invocation,
            content=types.Content(role="user", parts=[types.Part(text=question)]),
        ),
        Event(
            author=author,
            invocation_id=invocation,
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        ),
        Event(
            author=author,
            invocation_id=invocation,
            content=types.Content(role="user", parts=[types.Part(function_response=answer)]),
            actions=EventActions(
                state_delta={"last_country": country, "user:visits": turn},
                artifact_delta={"notes.txt": turn - 1},
            ),
        ),
        Event(
            author=author,
            invocation_id=invocation,
            content=types.Content(
                role="model", parts=[types.Part(text=f"The capital of {country} is ...")]
            ),
        ),
    ]


async def _cached_event_memory(path: Path, events: int) -> dict[str, Any]:
    from app.db.engine import create_db_engine
    from app.sessions.database import DatabaseSessionService

    url = f"sqlite+aiosqlite:///{path}"
    db_engine = create_db_engine(url)
    writer = DatabaseSessionService(db_engine, history_cache_events=0)
    session = await writer.create_session(app_name=CAPITAL, user_id="u", session_id="m")
    warm = await writer.create_session(app_name=CAPITAL, user_id="u", session_id="warm")
    await writer.append_event(warm, turn_events(0)[0])
    started = time.perf_counter()
    turn = 0
    while session.last_seq < events:
        turn += 1
        for event in turn_events(turn)[: events - session.last_seq]:
            await writer.append_event(session, event)
    append_s = time.perf_counter() - started
    del session
    # A new service: an empty history cache, whose one hot (parsed) session is the last read. Its
    # first read (of another session) pays the one-time costs (compiled statements) untraced.
    reader = DatabaseSessionService(db_engine, history_hot_sessions=1)
    await reader.get_session(app_name=CAPITAL, user_id="u", session_id="warm")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    loaded = await reader.get_session(app_name=CAPITAL, user_id="u", session_id="m")
    assert loaded is not None
    loaded_events = len(loaded.events)
    gc.collect()
    held_with_session = tracemalloc.get_traced_memory()[0] - before
    del loaded
    gc.collect()
    hot = tracemalloc.get_traced_memory()[0] - before
    # Reading the other session makes it the hot one: the long one keeps its compact form.
    await reader.get_session(app_name=CAPITAL, user_id="u", session_id="warm")
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    await db_engine.dispose()
    with sqlite3.connect(path) as db:
        stored = db.execute("SELECT avg(length(CAST(event AS BLOB))) FROM events").fetchone()[0]
    return {
        "events": loaded_events,
        "append_s": round(append_s, 1),
        "cache_bytes_per_event_hot": round(hot / loaded_events),
        "cache_bytes_per_event_cold": round((current - before) / loaded_events),
        "with_session_held_bytes_per_event": round(held_with_session / loaded_events),
        "peak_bytes_per_event": round((peak - before) / loaded_events),
        "stored_json_bytes_per_event": round(stored),
        "measured": (
            "tracemalloc bytes still allocated per event after one get_session on an empty "
            "history cache, the returned session dropped and gc run: 'hot' while it is the most "
            "recently used session (parsed and stored forms), 'cold' once another session was "
            "read after it (stored form only); 'with_session_held' before dropping the session; "
            "peak: the most allocated during the read; stored JSON: avg length of the "
            "events.event column"
        ),
    }


def cached_event_memory(events: int = 10_000) -> dict[str, Any]:
    """Bytes the history cache holds per event after reading a session of `events` events."""
    from app.db.migrate import upgrade

    with tempfile.TemporaryDirectory(prefix="agentd-cache-") as tmp:
        path = Path(tmp) / "memory.db"
        upgrade(f"sqlite+aiosqlite:///{path}")
        return asyncio.run(_cached_event_memory(path, events))


# -- output -------------------------------------------------------------------------------


COLUMNS = (
    "run_p50_ms",
    "run_mean_ms",
    "server_cpu_ms_per_turn",
    "request_chars",
    "contents",
)


def table(figures: dict[str, Any]) -> str:
    """The figures as Markdown: the long sessions by checkpoint, then GET and memory."""
    lines = [
        "| variant | turn | " + " | ".join(COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    verdicts = []
    for variant in (PLAIN, COMPACTING):
        long = figures[variant]
        if isinstance(long, str):
            lines.append(f"| {variant} | {long} |" + " |" * len(COLUMNS))
            continue
        for turn, point in long["checkpoints"].items():
            lines.append(
                f"| {variant} | {turn} | " + " | ".join(str(point[c]) for c in COLUMNS) + " |"
            )
        ratios = long["flatness"]
        if ratios:
            lines.append(
                f"| {variant} | {ratios['to_turn']} / {ratios['from_turn']} | "
                + " | ".join(str(ratios.get(c, "")) for c in COLUMNS)
                + " |"
            )
            verdicts.append(f"{variant}: {ratios['verdict']}")
        verdicts.append(
            f"{variant}: {long['errors']} errors, {long['stored_events']} events stored, "
            f"{long['wall_s']} s"
        )
    get = figures["get_250"]
    memory = figures["cached_event_memory"]
    lines += [
        "",
        *verdicts,
        "",
        "| measurement | figure | value |",
        "|---|---|---|",
        *(
            f"| GET session, {get['turns']} turns | {name} | {value} |"
            for name, value in get.items()
            if name != "turns"
        ),
        *(
            f"| history cache, in process | {name} | {value} |"
            for name, value in memory.items()
            if name != "measured"
        ),
    ]
    return "\n".join(lines)


def run(
    db: str = "sqlite",
    *,
    turns: int = 10_000,
    gets: int = 400,
    get_turns: int = 250,
    memory_events: int = 10_000,
) -> dict[str, Any]:
    """Every measurement; the figures."""
    figures = server_measurements(db, turns, gets, get_turns)
    figures["cached_event_memory"] = progress(
        "cached_event_memory", cached_event_memory(memory_events)
    )
    return figures


def main() -> None:
    """Parse arguments, run, print the table and the JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--gets", type=int, default=400)
    parser.add_argument("--get-turns", type=int, default=250)
    parser.add_argument("--memory-events", type=int, default=10_000)
    args = parser.parse_args()
    figures = run(
        args.db,
        turns=args.turns,
        gets=args.gets,
        get_turns=args.get_turns,
        memory_events=args.memory_events,
    )
    sys.stdout.write(table(figures) + "\n\n" + json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
