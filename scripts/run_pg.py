"""`make run-pg`: agentd's worker mode on this machine, with a throwaway PostgreSQL and no Docker.

The same split as docker-compose.yml: one API replica with AGENTD_RUN_INVOCATIONS=false (it only
queues invocations) and one `agentd worker` that claims and runs them, woken by PostgreSQL's
NOTIFY. The cluster is the test suite's (`tests.pgserver`: Debian's server binaries, run as
`nobody` when started as root, 127.0.0.1 only, trust auth, durability off), so there is one
place that knows how to start PostgreSQL here. agentd's data dir (local blobs) is a temporary
folder too, so blobs never outlive the rows that reference them.

Ctrl-C (SIGINT) or SIGTERM stops the API replica, then the worker (which hands unfinished runs
back within AGENTD_SHUTDOWN_GRACE_SECONDS), then the cluster, and deletes both folders. The two
agentd processes run in sessions of their own so a terminal's Ctrl-C reaches only this
supervisor, which stops them in that order; if either exits on its own, the rest is stopped too.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from tests.pgserver import PostgresServer, start_postgres

ROOT = Path(__file__).resolve().parents[1]
API_REPLICA_ID = "run-pg-api"
WORKER_REPLICA_ID = "run-pg-worker"
STARTUP_SECONDS = 60.0
# A worker may take AGENTD_SHUTDOWN_GRACE_SECONDS (20 by default) to hand its runs back.
STOP_SECONDS = 40.0


class Stop(Exception):
    """SIGINT or SIGTERM reached the supervisor: stop everything and clean up."""


def _raise_stop(signum: int, _frame: FrameType | None) -> None:
    # Once: a second Ctrl-C while stopping must not cut the clean-up short.
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, _already_stopping)
    raise Stop(signal.Signals(signum).name)


def _already_stopping(_signum: int, _frame: FrameType | None) -> None:
    say("already stopping: waiting for the processes and removing the database")


def say(message: str) -> None:
    """A supervisor line on stderr, beside the agentd processes' own logs."""
    sys.stderr.write(f"run-pg: {message}\n")
    sys.stderr.flush()


def agentd_command(*args: str) -> list[str]:
    """`agentd ARGS` with this interpreter, so the venv that runs the script runs agentd."""
    return [sys.executable, "-m", "app", *args]


@contextmanager
def throwaway_postgres() -> Iterator[PostgresServer]:
    """A fresh cluster, stopped and deleted (data dir included) on the way out."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()
        say(f"PostgreSQL stopped, {server.root} removed")


def start(name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start one agentd process in a session of its own (see the module docstring)."""
    process = subprocess.Popen(agentd_command(*args), cwd=ROOT, env=env, start_new_session=True)
    say(f"{name} started (pid {process.pid}): agentd {' '.join(args)}")
    return process


def stop(name: str, process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within STOP_SECONDS."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            say(f"{name} did not stop within {STOP_SECONDS:g} s: killed")
            process.kill()
            process.wait()
    say(f"{name} stopped (exit status {process.returncode})")


def wait_until_healthy(url: str, processes: dict[str, subprocess.Popen[bytes]]) -> None:
    """Poll GET /health until it answers 200; fail if a process exits or the deadline passes."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        for name, process in processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url}/health did not answer within {STARTUP_SECONDS:g} s")
        time.sleep(0.1)


def supervise(processes: dict[str, subprocess.Popen[bytes]]) -> int:
    """Wait until a signal arrives (Stop) or one process exits; return that process's status."""
    while True:
        for name, process in processes.items():
            if process.poll() is not None:
                say(f"{name} exited on its own (status {process.returncode}): stopping the rest")
                return process.returncode or 1
        time.sleep(0.2)  # a signal interrupts it with Stop


def run(host: str, port: int) -> int:
    """Start everything, serve until stopped, clean up; the exit status for the shell."""
    data_dir = Path(tempfile.mkdtemp(prefix="agentd-run-pg-data-"))
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        with throwaway_postgres() as server:
            database_url = server.url()
            say(f"PostgreSQL on 127.0.0.1:{server.port}, data in {server.root}")
            say(f"AGENTD_DATABASE_URL={database_url}")
            say(f"agentd's data (local blobs) in {data_dir}")
            env = os.environ | {
                "AGENTD_DATABASE_URL": database_url,
                "AGENTD_DATA_DIR": str(data_dir),
            }
            subprocess.run(agentd_command("migrate"), cwd=ROOT, env=env, check=True)
            api_env = env | {"AGENTD_RUN_INVOCATIONS": "false", "AGENTD_REPLICA_ID": API_REPLICA_ID}
            worker_env = env | {
                "AGENTD_RUN_INVOCATIONS": "true",
                "AGENTD_REPLICA_ID": WORKER_REPLICA_ID,
            }
            processes["worker"] = start("worker", ["worker"], worker_env)
            processes["api"] = start("api", ["serve", "--host", host, "--port", str(port)], api_env)
            try:
                url = f"http://{host}:{port}"
                wait_until_healthy(url, processes)
                say(f"agentd on {url}: API replica {API_REPLICA_ID}, worker {WORKER_REPLICA_ID}")
                say("Ctrl-C stops all and removes the database")
                return supervise(processes)
            finally:
                # Stop accepting requests first, then let the worker hand its runs back.
                for name in ("api", "worker"):
                    if name in processes:
                        stop(name, processes[name])
    except Stop as stopped:
        say(f"{stopped}: stopped")
        return 0
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """Parse HOST and PORT, then run until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m scripts.run_pg", description=__doc__)
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args(argv)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _raise_stop)
    sys.exit(run(args.host, args.port))


if __name__ == "__main__":
    main()
