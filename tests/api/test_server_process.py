"""The real server, started the way `make run` starts it, answers over HTTP on 127.0.0.1."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.shipped_apps import shipped_agents_dir

STARTUP_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    """`agentd serve --migrate` (what `make run` runs) on a free loopback port."""
    port = _free_port()
    env = {
        **os.environ,
        "AGENTD_DATA_DIR": str(tmp_path / "data"),
        "AGENTD_AGENTS_DIR": str(shipped_agents_dir(tmp_path / "agents")),
    }
    env.pop("AGENTD_DATABASE_URL", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "serve",
            "--migrate",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"server exited: {process.stdout.read() if process.stdout else ''}"
                )
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("server did not become healthy")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_real_server_creates_gets_and_deletes_a_session(server_url: str, tmp_path: Path) -> None:
    sessions = f"{server_url}/apps/capital_agent/users/u1/sessions"
    with httpx.Client(timeout=10) as http:
        assert http.get(f"{server_url}/readyz").status_code == 200
        created = http.post(sessions, json={"sessionId": "s1", "state": {"k": 1}})
        assert created.status_code == 201
        got = http.get(f"{sessions}/s1")
        assert got.status_code == 200
        assert got.json()["state"] == {"k": 1}
        assert http.delete(f"{sessions}/s1").status_code == 200
        missing = http.get(f"{sessions}/s1")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("application/problem+json")
    # The default configuration keeps its SQLite file in the data dir.
    assert (tmp_path / "data" / "agentd.db").is_file()
