"""`make run-pg` (scripts/run_pg.py): worker mode on this machine with a throwaway PostgreSQL.

The script runs for real: its own cluster, one API replica that only queues invocations and one
`agentd worker`. A /run through the API must come back completed with the worker as the
invocation's owner; SIGINT (Ctrl-C) must stop everything and delete the cluster's folder.
"""

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from scripts.run_pg import API_REPLICA_ID, WORKER_REPLICA_ID
from tests.live_server import PROJECT_ROOT, free_port
from tests.script_process import stop, wait_healthy

STARTUP_SECONDS = 90
STOP_SECONDS = 60


@dataclass
class RunPg:
    """The running script: its process, base URL and log file."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def logged(self, pattern: str) -> str:
        """The first group of `pattern` in the script's output (fails if absent)."""
        match = re.search(pattern, self.log.read_text())
        assert match, f"{pattern!r} not in the output:\n{self.log.read_text()}"
        return match.group(1)

    def interrupt(self) -> int:
        """Ctrl-C: SIGINT to the script, then its exit status once it has cleaned up."""
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=STOP_SECONDS)


@pytest.fixture
def run_pg(tmp_path: Path) -> Iterator[RunPg]:
    """`python -m scripts.run_pg --port <free port>`, healthy; stopped (SIGINT) afterwards."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTD_")}
    log = tmp_path / "run_pg.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "scripts.run_pg", "--port", str(port)],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    running = RunPg(process, f"http://127.0.0.1:{port}", log)
    try:
        wait_healthy(process, running.url, log, name="run_pg", seconds=STARTUP_SECONDS)
        yield running
    finally:
        stop(process, signal.SIGINT, seconds=STOP_SECONDS)


def test_run_pg_runs_invocations_on_the_worker_and_ctrl_c_removes_the_database(
    run_pg: RunPg,
) -> None:
    pg_root = Path(run_pg.logged(r"PostgreSQL on 127\.0\.0\.1:\d+, data in (\S+)"))
    data_dir = Path(run_pg.logged(r"agentd's data \(local blobs\) in (\S+)"))
    assert (pg_root / "data" / "PG_VERSION").exists()
    assert data_dir.is_dir()

    with httpx.Client(base_url=run_pg.url, timeout=30) as client:
        created = client.post("/apps/capital_agent/users/u1/sessions", json={})
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        answered = client.post(
            "/run",
            json={
                "appName": "capital_agent",
                "userId": "u1",
                "sessionId": session_id,
                "newMessage": {
                    "role": "user",
                    "parts": [{"text": "What is the capital of France?"}],
                },
            },
        )
        assert answered.status_code == 200, answered.text
        texts = [
            part["text"]
            for event in answered.json()
            for part in event["content"]["parts"]
            if "text" in part
        ]
        assert texts[-1] == "The capital of France is Paris."
        listed = client.get(f"/apps/capital_agent/users/u1/sessions/{session_id}/invocations")
        (invocation,) = listed.json()["invocations"]
    assert invocation["status"] == "completed"
    # The API replica only queued it: the worker claimed and ran it.
    assert invocation["owner"] == WORKER_REPLICA_ID != API_REPLICA_ID

    assert run_pg.interrupt() == 0
    assert not pg_root.exists()
    assert not data_dir.exists()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{run_pg.url}/health", timeout=1)
    output = run_pg.log.read_text()
    assert "api stopped" in output
    assert "worker stopped (exit status 0)" in output
