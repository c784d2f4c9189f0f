"""Shared helpers for the durable-engine spikes (issue 19).

Each spike (`spike_dbos`, `spike_procrastinate`, `spike_pgqueuer`) is one program that plays three
roles, chosen by its first argument:

- no argument: the orchestrator. It starts a throwaway PostgreSQL (the test suite's
  `tests/pgserver.py`), runs the scenarios R1-R4 with real worker processes, prints one
  `SUMMARY {json}` line and a human table;
- `worker ...`: one worker OS process of the library under test;
- `produce ...`: a separate producer process that enqueues a list of tasks, optionally paced.

Every process appends JSON lines (`{"t", "pid", "ev", ...}`) to its own file in the scenario's
directory; the orchestrator merges them and measures everything from those wall-clock timestamps
(all processes run on this machine, so they share one clock). Events: `ready` (worker set up),
`enqueue` / `enqueued` (producer, just before and just after the enqueue call), `start` / `end`
(a task's body begins / finishes, once per execution), `step_start` / `step_end` (each step).

Only the standard library is used here; `tests/pgserver.py` is stdlib-only too, so the spike venv
does not need agentd installed.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG_DIR_ENV = "SPIKE_LOG_DIR"

#: Every wait in the spikes is bounded; these are the defaults.
READY_TIMEOUT_S = 60.0
TAKEOVER_WINDOW_S = 20.0


# --------------------------------------------------------------------------- PostgreSQL


def start_postgres() -> Any:
    """A throwaway PostgreSQL 15 on 127.0.0.1, started by the test suite's own helper.

    `tests/pgserver.py` runs Debian's server binaries as `nobody` when we are root, on a free
    loopback port, with trust auth and fsync off (the cluster is thrown away afterwards).
    """
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.pgserver import start_postgres as _start

    return _start()


def dsn(server: Any, database: str) -> str:
    """A libpq URL (psycopg, asyncpg) for `database` on the throwaway server."""
    return f"postgresql://postgres@127.0.0.1:{server.port}/{database}"


def server_version(server: Any) -> str:
    return str(server.psql("SHOW server_version")).strip()


# --------------------------------------------------------------------------- JSON-lines log


class StepLog:
    """Append-only JSON lines, one file per process, one `write()` per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    @classmethod
    def for_process(cls, role: str) -> StepLog:
        log_dir = Path(os.environ[LOG_DIR_ENV])
        return cls(log_dir / f"{role}-{os.getpid()}.jsonl")

    def __call__(self, ev: str, **fields: Any) -> None:
        record = {"t": time.time(), "pid": os.getpid(), "ev": ev, **fields}
        os.write(self._fd, (json.dumps(record) + "\n").encode())


def read_events(log_dir: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for path in sorted(log_dir.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line cut by SIGKILL mid-write
    events.sort(key=lambda e: e["t"])
    return events


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(tasks))
    return path


def read_tasks(path: str) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = json.loads(Path(path).read_text())
    return tasks


def paced(tasks: list[dict[str, Any]], interval_s: float) -> Iterable[dict[str, Any]]:
    """Yield the tasks on an absolute schedule (t0 + i * interval), so pacing does not drift."""
    t0 = time.monotonic()
    for i, task in enumerate(tasks):
        delay = t0 + i * interval_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        yield task


async def apaced(tasks: list[dict[str, Any]], interval_s: float) -> Any:
    """`paced` for async producers."""
    import asyncio

    t0 = time.monotonic()
    for i, task in enumerate(tasks):
        delay = t0 + i * interval_s - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        yield task


# --------------------------------------------------------------------------- processes


class Procs:
    """Child processes of one spike run; `close()` SIGKILLs whatever is still alive."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.names: dict[int, str] = {}

    def spawn(self, name: str, argv: list[str], *, log_dir: Path) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env[LOG_DIR_ENV] = str(log_dir)
        env["PYTHONUNBUFFERED"] = "1"
        out = open(log_dir / f"{name}.out", "ab")
        try:
            proc = subprocess.Popen(
                [sys.executable, *argv],
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            out.close()
        self.procs.append(proc)
        self.names[proc.pid] = name
        return proc

    def by_pid(self, pid: int) -> subprocess.Popen[bytes] | None:
        return next((p for p in self.procs if p.pid == pid), None)

    @staticmethod
    def kill9(proc: subprocess.Popen[bytes]) -> float:
        """A real `kill -9` by PID; returns the wall-clock time of the kill."""
        t = time.time()
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        return t

    def kill_all(self, procs: Iterable[subprocess.Popen[bytes]] | None = None) -> None:
        for proc in list(procs if procs is not None else self.procs):
            if proc.poll() is None:
                self.kill9(proc)

    def close(self) -> None:
        self.kill_all()


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy or `timeout` passes (then None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def install_sigterm_exit() -> None:
    """Let SIGTERM (e.g. from run_all's timeout) unwind through the `finally` blocks."""

    def _exit(signum: int, _frame: Any) -> None:
        raise SystemExit(f"terminated by signal {signum}")

    signal.signal(signal.SIGTERM, _exit)


# --------------------------------------------------------------------------- scenarios


@dataclass
class Scenario:
    """One scenario: its own log directory, processes and (usually) its own database."""

    name: str
    dir: Path
    procs: Procs
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def spawn(self, role: str, argv: list[str]) -> subprocess.Popen[bytes]:
        proc = self.procs.spawn(role, argv, log_dir=self.dir)
        if role.startswith("w"):
            self.workers[role] = proc
        return proc

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.dir)

    def count(self, ev: str, **match: Any) -> int:
        return sum(
            1
            for e in self.events()
            if e["ev"] == ev and all(e.get(k) == v for k, v in match.items())
        )

    def wait_ready(self, n: int, timeout: float = READY_TIMEOUT_S) -> None:
        if not wait_for(lambda: self.count("ready") >= n, timeout, 0.1):
            raise RuntimeError(f"{self.name}: {n} workers not ready after {timeout:.0f} s")

    def wait_ends(self, tasks: Iterable[str], timeout: float) -> bool:
        wanted = set(tasks)

        def done() -> bool:
            ended = {e["task"] for e in self.events() if e["ev"] == "end"}
            return wanted <= ended

        return bool(wait_for(done, timeout, 0.1))

    def stop(self) -> None:
        """SIGKILL every child still alive (scenarios run one after another)."""
        self.procs.kill_all()


class Spike:
    """The orchestrator side: scenario directories under one temporary root, all children killed."""

    def __init__(self, library: str) -> None:
        self.library = library
        self.root = Path(tempfile.mkdtemp(prefix=f"spike-{library}-"))
        self.procs = Procs()
        self.pg: Any = None

    def postgres(self) -> Any:
        """Start the throwaway PostgreSQL (stopped and removed by `close()`)."""
        self.pg = start_postgres()
        return self.pg

    def database(self, name: str) -> str:
        """A fresh database on the throwaway server; returns its libpq URL."""
        self.pg.create_database(name)
        return dsn(self.pg, name)

    def scenario(self, name: str) -> Scenario:
        path = self.root / name
        path.mkdir()
        return Scenario(name=name, dir=path, procs=self.procs)

    def guard(self, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run one scenario; a failure is recorded in its result and the others still run."""
        try:
            return fn()
        except Exception as exc:
            import traceback

            traceback.print_exc()
            return {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            self.procs.kill_all()

    def close(self) -> None:
        self.procs.close()
        if self.pg is not None:
            self.pg.stop()


# --------------------------------------------------------------------------- analysis


@dataclass
class Run:
    """One execution of a task's body in one process."""

    task: str
    session: str
    pid: int
    start: float
    end: float | None = None
    attempt: Any = None


def task_runs(events: list[dict[str, Any]]) -> list[Run]:
    runs: list[Run] = []
    open_runs: dict[tuple[str, int], Run] = {}
    for e in events:
        if e["ev"] == "start":
            run = Run(e["task"], e.get("session", ""), e["pid"], e["t"], attempt=e.get("attempt"))
            runs.append(run)
            open_runs[(e["task"], e["pid"])] = run
        elif e["ev"] == "end":
            run_or_none = open_runs.pop((e["task"], e["pid"]), None)
            if run_or_none is not None:
                run_or_none.end = e["t"]
    return runs


def same_session_overlaps(runs: list[Run], horizon: float) -> int:
    """Pairs of runs of one session whose [start, end) intervals intersect (open runs end at
    `horizon`)."""
    by_session: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_session[run.session].append(run)
    overlaps = 0
    for session_runs in by_session.values():
        for i, a in enumerate(session_runs):
            for b in session_runs[i + 1 :]:
                a_end = a.end if a.end is not None else horizon
                b_end = b.end if b.end is not None else horizon
                if a.start < b_end and b.start < a_end:
                    overlaps += 1
    return overlaps


def starts_while_session_busy(runs: list[Run], horizon: float) -> int:
    """Runs that started while another run of their session was still running."""
    busy = 0
    for run in runs:
        if any(
            other is not run
            and other.session == run.session
            and other.start <= run.start < (other.end if other.end is not None else horizon)
            for other in runs
        ):
            busy += 1
    return busy


def session_gaps(runs: list[Run]) -> list[float]:
    """For each session, the time from one finished run's end to the session's next start."""
    by_session: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_session[run.session].append(run)
    gaps: list[float] = []
    for session_runs in by_session.values():
        ordered = sorted(session_runs, key=lambda r: r.start)
        for prev, nxt in itertools.pairwise(ordered):
            if prev.end is not None:
                gaps.append(nxt.start - prev.end)
    return gaps


def max_running_per_pid(runs: list[Run], horizon: float) -> dict[int, int]:
    result: dict[int, int] = {}
    by_pid: dict[int, list[Run]] = defaultdict(list)
    for run in runs:
        by_pid[run.pid].append(run)
    for pid, pid_runs in by_pid.items():
        points: list[tuple[float, int]] = []
        for run in pid_runs:
            points.append((run.start, 1))
            points.append((run.end if run.end is not None else horizon, -1))
        running = peak = 0
        for _, delta in sorted(points, key=lambda p: (p[0], p[1])):
            running += delta
            peak = max(peak, running)
        result[pid] = peak
    return result


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-p * len(ordered) // 100))))
    return ordered[rank - 1]


def median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def rnd(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


# --------------------------------------------------------------------------- R1, R2, R4

WorkerStarter = Callable[[Scenario, str], subprocess.Popen[bytes]]
ProducerStarter = Callable[[Scenario, list[dict[str, Any]], float], subprocess.Popen[bytes]]


def r1_mix() -> list[dict[str, Any]]:
    """6 tasks in session A, then 3 in B and 3 in C, each 3 steps x 0.3 s (enqueued in order)."""
    tasks = [{"task": f"A{i}", "session": "A"} for i in range(1, 7)]
    tasks += [{"task": f"B{i}", "session": "B"} for i in range(1, 4)]
    tasks += [{"task": f"C{i}", "session": "C"} for i in range(1, 4)]
    for task in tasks:
        task.update(steps=3, step_s=0.3)
    return tasks


def scenario_r1(
    sc: Scenario,
    start_worker: WorkerStarter,
    start_producer: ProducerStarter,
    *,
    timeout: float = 90.0,
) -> dict[str, Any]:
    """R1: one running task per session key across 2 worker processes."""
    start_worker(sc, "w1")
    start_worker(sc, "w2")
    sc.wait_ready(2)
    tasks = r1_mix()
    start_producer(sc, tasks, 0.0)
    completed = sc.wait_ends([t["task"] for t in tasks], timeout)
    horizon = time.time()
    sc.stop()
    events = sc.events()
    runs = task_runs(events)
    enq = [e["t"] for e in events if e["ev"] == "enqueue"]
    ends = [r.end for r in runs if r.end is not None]
    gaps = session_gaps(runs)
    per_pid = max_running_per_pid(runs, horizon)
    return {
        "tasks": len(tasks),
        "completed": sum(1 for t in tasks if any(r.task == t["task"] and r.end for r in runs)),
        "all_completed_within_s": timeout if not completed else None,
        "same_session_overlaps": same_session_overlaps(runs, horizon),
        "starts_while_session_busy": starts_while_session_busy(runs, horizon),
        "start_order": "".join(r.session for r in sorted(runs, key=lambda r: r.start)),
        "max_running_per_worker": sorted(per_pid.values(), reverse=True),
        "handoff_gap_median_s": rnd(median(gaps)),
        "handoff_gap_max_s": rnd(max(gaps) if gaps else None),
        "makespan_s": rnd(max(ends) - min(enq)) if ends and enq else None,
    }


def scenario_r2(
    sc: Scenario,
    start_worker: WorkerStarter,
    start_producer: ProducerStarter,
    *,
    window: float = TAKEOVER_WINDOW_S,
    steps: int = 8,
    step_s: float = 0.5,
    kill_at: int = 3,
    remedy: Callable[[Scenario, str], str] | None = None,
    read_attempts: Callable[[Scenario], Any] | None = None,
) -> dict[str, Any]:
    """R2: SIGKILL the worker running a multi-step task while a second worker is alive.

    Task L1 (session S, `steps` x `step_s`) is followed by L2 in the same session (1 step), so we
    also see whether the session stays blocked behind the dead task. The worker running L1 is
    killed with SIGKILL during step `kill_at`. We then wait `window` seconds for any other process
    to start L1 again with no application code at all. If that does not happen and a `remedy` is
    given (the smallest piece of application code the library needs), we apply it and measure again.
    """
    start_worker(sc, "w1")
    start_worker(sc, "w2")
    sc.wait_ready(2)
    start_producer(
        sc,
        [
            {"task": "L1", "session": "S", "steps": steps, "step_s": step_s},
            {"task": "L2", "session": "S", "steps": 1, "step_s": 0.3},
        ],
        0.0,
    )

    def step_started() -> dict[str, Any] | None:
        return next(
            (
                e
                for e in sc.events()
                if e["ev"] == "step_start" and e.get("task") == "L1" and e.get("i") == kill_at
            ),
            None,
        )

    hit = wait_for(step_started, 60.0)
    if not hit:
        sc.stop()
        return {"error": f"L1 never reached step {kill_at}"}
    victim = sc.procs.by_pid(hit["pid"])
    assert victim is not None
    victim_name = next(name for name, p in sc.workers.items() if p is victim)
    time.sleep(step_s * 0.4)  # mid-step
    t_kill = sc.procs.kill9(victim)

    def restarted_after(t0: float) -> dict[str, Any] | None:
        return next(
            (
                e
                for e in sc.events()
                if e["ev"] in ("start", "step_start")
                and e.get("task") == "L1"
                and e["pid"] != victim.pid
                and e["t"] > t0
            ),
            None,
        )

    result: dict[str, Any] = {
        "task": f"{steps} steps x {step_s} s, SIGKILL during step {kill_at}",
        "window_s": window,
    }
    takeover = wait_for(lambda: restarted_after(t_kill), window, 0.05)
    result["takeover_without_app_code"] = bool(takeover)
    result["takeover_s"] = rnd(takeover["t"] - t_kill) if takeover else None
    if not takeover and remedy is not None:
        t_remedy = time.time()
        result["remedy"] = remedy(sc, victim_name)
        resumed = wait_for(lambda: restarted_after(t_remedy), 30.0, 0.05)
        result["resumed_after_remedy_s"] = rnd(resumed["t"] - t_remedy) if resumed else None
    finished = sc.wait_ends(["L1", "L2"], 30.0)
    attempts = read_attempts(sc) if read_attempts is not None else None
    sc.stop()
    events = sc.events()
    step_counts = Counter(
        e["i"] for e in events if e["ev"] == "step_start" and e.get("task") == "L1"
    )
    runs = task_runs(events)
    l1_runs = [r for r in runs if r.task == "L1"]
    l2_runs = [r for r in runs if r.task == "L2"]
    l1_end = max((r.end for r in l1_runs if r.end), default=None)
    result.update(
        {
            "finished": finished,
            "l1_body_runs": len(l1_runs),
            "step_executions": {str(i): step_counts.get(i, 0) for i in range(steps)},
            "completed_steps_redone": sorted(i for i in range(kill_at) if step_counts[i] > 1),
            "inflight_step_runs": step_counts.get(kill_at, 0),
            "attempt_seen_by_task": [r.attempt for r in l1_runs],
            "attempt_counter": attempts,
            "l2_started_after_l1_end_s": (
                rnd(l2_runs[0].start - l1_end) if l2_runs and l1_end else None
            ),
        }
    )
    return result


def scenario_r4(
    sc: Scenario,
    start_worker: WorkerStarter,
    start_producer: ProducerStarter,
    *,
    n: int = 100,
    interval_s: float = 0.02,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """R4: enqueue->start latency for `n` zero-step tasks (each its own session key), enqueued
    every `interval_s` by a separate producer process, 2 workers."""
    start_worker(sc, "w1")
    start_worker(sc, "w2")
    sc.wait_ready(2)
    tasks = [
        {"task": f"Z{i:03d}", "session": f"z{i:03d}", "steps": 0, "step_s": 0} for i in range(n)
    ]
    start_producer(sc, tasks, interval_s)
    completed = sc.wait_ends([t["task"] for t in tasks], timeout)
    sc.stop()
    events = sc.events()
    enqueue = {e["task"]: e["t"] for e in events if e["ev"] == "enqueue"}
    enqueued = {e["task"]: e["t"] for e in events if e["ev"] == "enqueued"}
    first_start: dict[str, float] = {}
    for e in events:
        if e["ev"] == "start":
            first_start.setdefault(e["task"], e["t"])
    lat = [(first_start[k] - enqueue[k]) * 1000 for k in first_start if k in enqueue]
    call = [(enqueued[k] - enqueue[k]) * 1000 for k in enqueued if k in enqueue]
    return {
        "tasks": n,
        "interval_ms": interval_s * 1000,
        "started": len(first_start),
        "all_started": completed,
        "latency_ms_p50": rnd(percentile(lat, 50), 1),
        "latency_ms_p99": rnd(percentile(lat, 99), 1),
        "latency_ms_max": rnd(max(lat) if lat else None, 1),
        "enqueue_call_ms_p50": rnd(percentile(call, 50), 1),
    }


# --------------------------------------------------------------------------- output


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def print_summary(summary: dict[str, Any]) -> None:
    """One machine-readable line (`SUMMARY {...}`), then a human table of every figure."""
    say("SUMMARY " + json.dumps(summary, sort_keys=True))
    say(f"\n== {summary['library']} {summary.get('version', '')} ==")
    rows: list[tuple[str, str]] = []
    for section in (
        "r1",
        "r1_dedupe",
        "r2",
        "r2_default",
        "r3",
        "r4",
        "r4_fast",
        "r4_uncapped",
    ):
        block = summary.get(section)
        if not isinstance(block, dict):
            continue
        for key, value in block.items():
            rows.append((f"{section}.{key}", fmt(value)))
    rows.append(("runtime_s", fmt(summary.get("runtime_s"))))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        say(f"  {key.ljust(width)}  {value}")
    say()


def run_spike(library: str, version: str, body: Callable[[Spike], dict[str, Any]]) -> int:
    """Orchestrator entry point: run `body`, always kill the children, print the summary."""
    install_sigterm_exit()
    t0 = time.monotonic()
    spike = Spike(library)
    summary: dict[str, Any] = {"library": library, "version": version}
    try:
        summary.update(body(spike))
    except Exception as exc:  # recorded, not hidden: the summary says what failed
        summary["error"] = f"{type(exc).__name__}: {exc}"
        import traceback

        traceback.print_exc()
    finally:
        spike.close()
    summary["runtime_s"] = round(time.monotonic() - t0, 1)
    summary["logs"] = str(spike.root)
    print_summary(summary)
    return 1 if "error" in summary else 0
