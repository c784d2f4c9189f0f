"""A script or server the tests start as a process of its own, its output in a log file: wait
until it answers `/health`, and stop it (`test_run_pg`, `test_deployment`'s entrypoint)."""

import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

POLL_SECONDS = 0.05


def wait_healthy(
    process: subprocess.Popen[bytes], url: str, log: Path, *, name: str, seconds: float
) -> None:
    """Until `GET {url}/health` answers 200; fails the test, with `log`, if `process` (called
    `name`) exits first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            pytest.fail(f"{name} exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"no /health within {seconds} s:\n{log.read_text()}")
        time.sleep(POLL_SECONDS)


def stop(process: subprocess.Popen[bytes], sig: signal.Signals, *, seconds: float) -> None:
    """If `process` still runs: `sig` to it, then SIGKILL if it has not exited in `seconds`."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
