"""Peak server memory while a large artifact is uploaded and downloaded over HTTP.

Starts `agentd serve --migrate` (SQLite + local blob folder) on a free loopback port, uploads
one artifact of `--mib` MiB through the raw `PUT .../content` route as a chunked stream, downloads
it again through `GET .../content`, checks the sha256, and prints JSON with the server's RSS
before, its peak (VmHWM) after, and the throughput. Run: `python -m bench.artifact_rss --mib 200`.
"""

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

CHUNK = 1024 * 1024
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_peak(pid: int) -> None:
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0), so the peak we read
    # later is the peak of the transfer, not of start-up.
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _payload(total: int) -> Iterator[bytes]:
    block = hashlib.sha256(b"agentd").digest() * (CHUNK // 32)
    sent = 0
    while sent < total:
        size = min(CHUNK, total - sent)
        yield block[:size]
        sent += size


def run(mib: int) -> dict[str, float | int | str]:
    """Run the measurement and return its figures."""
    total = mib * CHUNK
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="agentd-bench-") as tmp:
        env = {
            **os.environ,
            "AGENTD_DATA_DIR": str(Path(tmp) / "data"),
            "AGENTD_AGENTS_DIR": str(PROJECT_ROOT / "agents"),
            "AGENTD_MAX_ARTIFACT_BYTES": str(total + CHUNK),
            "AGENTD_WORKERS": "1",  # the RSS read is this process's
        }
        env.pop("AGENTD_DATABASE_URL", None)
        server = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--migrate", "--port", str(port)],
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(timeout=300) as http:
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if http.get(f"{base}/health").status_code == 200:
                            break
                    except httpx.TransportError:
                        if time.monotonic() > deadline:
                            raise
                    time.sleep(0.05)
                sessions = f"{base}/apps/capital_agent/users/bench/sessions"
                http.post(sessions, json={"sessionId": "big"}).raise_for_status()
                url = f"{sessions}/big/artifacts/big.bin/content"
                http.put(url, content=b"warm-up").raise_for_status()
                http.get(url).raise_for_status()

                rss_before = _status_kib(server.pid, "VmRSS")
                _reset_peak(server.pid)
                started = time.monotonic()
                put = http.put(url, content=_payload(total))
                put.raise_for_status()
                upload_s = time.monotonic() - started
                peak_upload = _status_kib(server.pid, "VmHWM")

                digest = hashlib.sha256()
                received = 0
                started = time.monotonic()
                with http.stream("GET", url) as response:
                    response.raise_for_status()
                    for chunk in response.iter_bytes(CHUNK):
                        digest.update(chunk)
                        received += len(chunk)
                download_s = time.monotonic() - started
                peak_total = _status_kib(server.pid, "VmHWM")
        finally:
            server.terminate()
            server.wait(timeout=30)
    expected = hashlib.sha256(b"".join(_payload(total))).hexdigest() if mib <= 16 else None
    assert received == total, (received, total)
    assert put.json()["sha256"] == digest.hexdigest()
    if expected is not None:
        assert expected == digest.hexdigest()
    return {
        "artifact_mib": mib,
        "server_rss_before_mib": round(rss_before / 1024, 1),
        "server_peak_during_upload_mib": round(peak_upload / 1024, 1),
        "server_peak_during_upload_and_download_mib": round(peak_total / 1024, 1),
        "peak_growth_mib": round((peak_total - rss_before) / 1024, 1),
        "upload_mib_per_s": round(mib / upload_s, 1),
        "download_mib_per_s": round(mib / download_s, 1),
        "sha256": digest.hexdigest(),
    }


def main() -> None:
    """Parse arguments, run, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    sys.stdout.write(json.dumps(run(args.mib), indent=2) + "\n")


if __name__ == "__main__":
    main()
