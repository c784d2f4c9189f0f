"""Starting and watching tests/tools/mcp_test_server.py, for the MCP tests."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.live_server import free_port

SERVER = Path(__file__).with_name("mcp_test_server.py")


def calls(directory: Path) -> list[dict[str, Any]]:
    """The calls the test servers of `directory` served, in order."""
    path = directory / "calls.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def server_pids(directory: Path) -> list[int]:
    """Every test server started for `directory` (pid files)."""
    return [int(p.read_text()) for p in directory.glob("server-*.pid")]


def alive(pids: list[int]) -> list[int]:
    """Those of `pids` that still exist: running, or exited but never reaped (a zombie)."""
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


@contextmanager
def http_server(directory: Path, transport: str = "http") -> Iterator[str]:
    """The test server over streamable HTTP (or `sse`) on a free loopback port; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), transport, str(port)],
        env={**os.environ, "MCP_TEST_DIR": str(directory)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.head(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
