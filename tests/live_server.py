"""Real agentd server processes for HTTP tests: `python -m app serve --migrate` on 127.0.0.1,
and `python -m app worker --migrate` processes that run invocations without HTTP.

The agents dir holds the shipped apps (`tests.shipped_apps`) plus the test apps of tests/apps
(symlinked), so tests can drive a tool that waits on a gate file they control.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.shipped_apps import link_apps, shipped_agents_dir

PROJECT_ROOT = Path(__file__).resolve().parents[1]
STARTUP_SECONDS = 60


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def build_agents_dir(target: Path) -> Path:
    """An agents dir with the shipped apps and the test apps (never the apps a user added to
    `agents/`: `tests.shipped_apps`)."""
    test_apps = [
        source
        for source in (PROJECT_ROOT / "tests" / "apps").iterdir()
        if source.is_dir() and not source.name.startswith(("_", "."))
    ]
    return link_apps(shipped_agents_dir(target), test_apps)


def gated_app_env(root: Path, gates: Path, database_url: str | None = None) -> dict[str, str]:
    """The settings of a server on the shipped and test apps: its data under `root`, the test
    apps' gates in `gates` (made if missing), SQLite unless `database_url`."""
    gates.mkdir(parents=True, exist_ok=True)
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_TEST_GATES": str(gates),
    }
    if database_url:
        env["AGENTD_DATABASE_URL"] = database_url
    return env


class LiveServer:
    """One server process."""

    def __init__(self, workdir: Path, env: dict[str, str], *, args: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.env = env
        self.args = list(args)  # more `agentd serve` options
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = workdir / f"server-{self.port}.log"

    def start(self) -> "LiveServer":
        """Start and wait until /health answers."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        # One process unless the test asks for more: tests signal, stop and measure the pid.
        env = {"AGENTD_WORKERS": "1", **os.environ, **self.env}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    *("-m", "app", "serve", "--migrate", "--port", str(self.port)),
                    *self.args,
                ],
                cwd=self.workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"server did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks run."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """Graceful stop."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


class WorkerProcess(LiveServer):
    """One `agentd worker` process (no HTTP): started once its log says it runs invocations."""

    def start(self) -> "WorkerProcess":
        """Start and wait until it claims work."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env, "AGENTD_LOG_FORMAT": "text"}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "app", "worker", "--migrate"],
                cwd=self.workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while "running invocations" not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log.read_text()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker did not start:\n{self.log.read_text()}")
            time.sleep(0.05)
        return self


class GatedProcesses:
    """The server and worker processes of one test on the shipped and test apps, sharing one
    database, agents dir and gates folder; 2 s leases. `stop_all` at the end (a process a test
    stopped with SIGSTOP is continued first)."""

    def __init__(self, root: Path, database_url: str | None) -> None:
        self.root = root
        self.gates = root / "gates"
        self.vars = {
            **gated_app_env(root, self.gates, database_url),
            "AGENTD_LEASE_SECONDS": "2",
            "AGENTD_LOG_LEVEL": "INFO",
        }
        self.processes: list[LiveServer] = []

    def server(self, name: str, **settings: str) -> LiveServer:
        """A started server process."""
        process = LiveServer(self.root / name, {**self.vars, **settings})
        self.processes.append(process)
        return process.start()

    def worker(self, name: str, **settings: str) -> "WorkerProcess":
        """A started `agentd worker` process."""
        process = WorkerProcess(self.root / name, {**self.vars, **settings})
        self.processes.append(process)
        return process.start()

    def open_gate(self, session_id: str) -> None:
        """Let the session's gated tool (durable_agent's `slow_step`) return."""
        (self.gates / f"{session_id}.open").touch()

    def log(self, session_id: str) -> list[dict[str, Any]]:
        """What durable_agent logged for the session: model calls and tool runs, by pid."""
        path = self.gates / f"{session_id}.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line]

    def in_tool(self, session_id: str, tool: str, pid: int) -> bool:
        """Whether process `pid` has started `tool` in the session."""
        return any(
            e["what"] == "tool" and e["name"] == tool and e["pid"] == pid
            for e in self.log(session_id)
        )

    def stop_all(self) -> None:
        """Stop every process (continuing a stopped one first, so it can exit gracefully)."""
        for process in self.processes:
            if process.process is not None and process.process.poll() is None:
                process.process.send_signal(signal.SIGCONT)
            process.stop()


def metric_samples(http: httpx.Client, name: str) -> dict[str, float]:
    """The samples of `name` on the server's /metrics, by label text ("" without labels)."""
    samples: dict[str, float] = {}
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(f"{name}{{"):
            labels, _, value = line[len(name) + 1 :].partition("} ")
            samples[labels] = float(value)
        elif line.startswith(f"{name} "):
            samples[""] = float(line.split()[-1])
    return samples


def wait_until(
    predicate: Callable[[], object], *, timeout: float = 30.0, interval: float = 0.05
) -> None:
    """Poll `predicate()` until it is truthy, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(interval)


@dataclass
class Frame:
    """One SSE frame."""

    event: str = "message"
    id: str | None = None
    data: str = ""


def iter_sse(lines: Iterator[str]) -> Iterator[Frame]:
    """Parse SSE frames from text lines (comments are skipped)."""
    frame = Frame()
    seen = False
    for line in lines:
        if line == "":
            if seen:
                yield frame
            frame, seen = Frame(), False
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        seen = True
        if name == "event":
            frame.event = value
        elif name == "id":
            frame.id = value
        elif name == "data":
            frame.data = f"{frame.data}\n{value}" if frame.data else value
    if seen:
        yield frame
