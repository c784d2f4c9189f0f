"""A throwaway PostgreSQL server for the test suite, started from Debian's server binaries.

PostgreSQL refuses to run as root, so when the suite runs as root (CI does) the server runs as the
unprivileged `nobody` via `runuser`. It listens on 127.0.0.1 on a free port, with trust auth and
durability switched off (a test cluster needs speed, not crash safety). If it cannot start, the
fixtures that need it raise: PostgreSQL tests never skip silently.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

UNPRIVILEGED_USER = "nobody"


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError(
        "PostgreSQL server binaries not found (install Debian's `postgresql` package; "
        ".ci/run does so when initdb is missing)."
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    """A running cluster; `url(db)` gives an asyncpg URL for one of its databases."""

    root: Path
    port: int
    bin_dir: Path
    #: The `postgres` command-line options it was started with, for `start()` after `stop_fast()`.
    options: str = ""

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy asyncpg URL of `database`."""
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL through psql (CREATE DATABASE cannot run inside a transaction)."""
        result = subprocess.run(
            [
                str(self.bin_dir / "psql") if (self.bin_dir / "psql").exists() else "psql",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-qAtc",
                sql,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        return result.stdout

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create database `name` (optionally from a template) and return its URL."""
        suffix = f" TEMPLATE {template}" if template else ""
        self.psql(f'CREATE DATABASE "{name}"{suffix}')
        return self.url(name)

    def stop_fast(self) -> None:
        """`pg_ctl stop -m fast`: end every session, shut down cleanly, keep the data dir."""
        self._pg_ctl("-m", "fast", "stop")

    def start(self) -> None:
        """Start the cluster again on its port and data dir (after `stop_fast`)."""
        self._pg_ctl("-l", str(self.root / "server.log"), "-o", self.options, "start")

    def _pg_ctl(self, *args: str) -> None:
        data = str(self.root / "data")
        command = [str(self.bin_dir / "pg_ctl"), "-D", data, "-w", "-t", "60", *args]
        try:
            _run_as_owner(command)
        except subprocess.CalledProcessError as exc:
            log = self.root / "server.log"
            server_log = log.read_text() if log.exists() else ""
            raise RuntimeError(
                f"pg_ctl {' '.join(args)} failed: {exc.stderr or exc.stdout}\n{server_log}"
            ) from exc

    def stop(self) -> None:
        """Stop the server immediately and remove its files."""
        _run_as_owner(
            [
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.root / "data"),
                "-m",
                "immediate",
                "stop",
            ],
            check=False,
        )
        shutil.rmtree(self.root, ignore_errors=True)


def _run_as_owner(cmd: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", UNPRIVILEGED_USER, "--", *cmd]
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def start_postgres() -> PostgresServer:
    """Initialise and start a fresh cluster; raise with the server log if it fails."""
    bin_dir = _bin_dir()
    root = Path(tempfile.mkdtemp(prefix="agentd-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, user=UNPRIVILEGED_USER)
    data = root / "data"
    log = root / "server.log"
    port = _free_port()
    try:
        _run_as_owner(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ]
        )
        options = (
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        _run_as_owner(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
    except subprocess.CalledProcessError as exc:
        server_log = log.read_text() if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(
            f"PostgreSQL failed to start: {exc.stderr or exc.stdout}\n{server_log}"
        ) from exc
    return PostgresServer(root=root, port=port, bin_dir=bin_dir, options=options)
