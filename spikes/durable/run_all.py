"""Run the three durable-engine spikes one after another and print a combined table.

`make spikes` runs this with the spike venv: `spikes/.venv/bin/python -m spikes.durable.run_all`.
Each spike is its own process (DBOS is a process-wide singleton) with its own throwaway PostgreSQL;
each is stopped with SIGTERM (which unwinds its cleanup) if it runs past its time limit.
Every figure of the run is also written to a JSON file under the temporary directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from spikes.durable.common import REPO_ROOT, say

SPIKES = ("spike_dbos", "spike_procrastinate", "spike_pgqueuer")
LIMIT_S = 240.0


def run_one(module: str) -> dict[str, Any]:
    """Run one spike, echo its output as it comes, return its SUMMARY (SIGTERM past the limit)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", f"spikes.durable.{module}"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        proc.send_signal(signal.SIGTERM)

    timer = threading.Timer(LIMIT_S, stop)
    timer.start()
    summary: dict[str, Any] = {"library": module.removeprefix("spike_")}
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("SUMMARY "):
                summary.update(json.loads(line.removeprefix("SUMMARY ")))
            else:
                say(line.rstrip("\n"))
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    finally:
        timer.cancel()
    if timed_out.is_set():
        summary["error"] = f"stopped after {LIMIT_S:.0f} s"
    summary.setdefault("runtime_s", round(time.monotonic() - t0, 1))
    summary["exit_code"] = proc.returncode
    return summary


def g(summary: dict[str, Any], *path: str) -> Any:
    value: Any = summary
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def s(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}{unit}"
    return f"{value}{unit}"


def gap_cell(x: dict[str, Any]) -> str:
    if g(x, "r1", "same_session_overlaps"):
        return "n/a: a session's tasks overlap"
    median, worst = g(x, "r1", "handoff_gap_median_s"), g(x, "r1", "handoff_gap_max_s")
    return f"{s(median, ' s')} / {s(worst, ' s')}"


def attempts_cell(x: dict[str, Any]) -> str:
    counter = g(x, "r2", "attempt_counter")
    if isinstance(counter, dict) and "recovery_attempts" in counter:
        return f"recovery_attempts={counter['recovery_attempts']} at the end"
    seen = g(x, "r2", "attempt_seen_by_task")
    return f"job.attempts seen by each run: {s(seen)}" if seen else "-"


def r2_cell(r2: dict[str, Any] | None) -> str:
    if not r2:
        return "-"
    if r2.get("takeover_without_app_code"):
        text = f"yes, {s(r2.get('takeover_s'), ' s')}"
    else:
        text = f"no (not within {s(r2.get('window_s'), ' s')})"
        if r2.get("resumed_after_remedy_s") is not None:
            text += f"; with app code: {s(r2.get('resumed_after_remedy_s'), ' s')} after it"
    redone = r2.get("completed_steps_redone")
    text += f"; completed steps redone: {redone if redone else 'none'}"
    text += f"; body runs {s(r2.get('l1_body_runs'))}"
    return text


def table(summaries: list[dict[str, Any]]) -> str:
    def pair(section: str, a: str, b: str, unit: str) -> Callable[[dict[str, Any]], str]:
        def cell(x: dict[str, Any]) -> str:
            if not g(x, section):
                return "-"
            return f"{s(g(x, section, a), unit)} / {s(g(x, section, b), unit)}"

        return cell

    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("R1 same-session overlapping pairs", lambda x: s(g(x, "r1", "same_session_overlaps"))),
        (
            "R1 tasks started while their session was busy",
            lambda x: s(g(x, "r1", "starts_while_session_busy")),
        ),
        ("R1 start order", lambda x: s(g(x, "r1", "start_order"))),
        ("R1 max running per worker", lambda x: s(g(x, "r1", "max_running_per_worker"))),
        ("R1 session hand-off gap median / max", gap_cell),
        ("R1 12 tasks, first enqueue to last end", lambda x: s(g(x, "r1", "makespan_s"), " s")),
        ("R2 takeover after SIGKILL", lambda x: r2_cell(g(x, "r2"))),
        ("R2 same, default dequeue_timeout", lambda x: r2_cell(g(x, "r2_default"))),
        ("R2 attempt counter", attempts_cell),
        ("R3 SQLite", lambda x: r3_cell(g(x, "r3"))),
        ("R4 enqueue->start p50 / p99", pair("r4", "latency_ms_p50", "latency_ms_p99", " ms")),
        ("R4 same, 0.1 s poll", pair("r4_fast", "latency_ms_p50", "latency_ms_p99", " ms")),
        (
            "R4 same, 1 s poll, no per-worker cap",
            pair("r4_uncapped", "latency_ms_p50", "latency_ms_p99", " ms"),
        ),
        ("spike run time", lambda x: s(x.get("runtime_s"), " s")),
    ]
    names = [f"{x['library']} {x.get('version', '')}".strip() for x in summaries]
    header = "| | " + " | ".join(names) + " |"
    lines = [header, "|---" * (len(summaries) + 1) + "|"]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(x) for x in summaries) + " |")
    return "\n".join(lines)


def r3_cell(r3: dict[str, Any] | None) -> str:
    if not r3:
        return "-"
    if not r3.get("supported"):
        return "no: PostgreSQL only"
    return (
        f"yes ({r3.get('backend')}): resumed {s(r3.get('resume_s_after_restart_spawn'), ' s')} "
        f"after restart, completed steps redone: {r3.get('completed_steps_redone') or 'none'}, "
        f"session held: {s(r3.get('q2_waited_for_q1'))}"
    )


def main() -> int:
    t0 = time.monotonic()
    summaries = [run_one(module) for module in SPIKES]
    total = round(time.monotonic() - t0, 1)
    say("\n== combined ==")
    say(table(summaries))
    say(f"\ntotal: {total} s")
    fd, path = tempfile.mkstemp(prefix="spikes-durable-", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump({"total_s": total, "spikes": summaries}, out, indent=2, sort_keys=True)
    say(f"all figures: {path}")
    failed = [x["library"] for x in summaries if x.get("error") or x.get("exit_code")]
    if failed:
        say(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
