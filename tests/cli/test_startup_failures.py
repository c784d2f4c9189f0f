"""`agentd serve` and `agentd worker` that cannot start say why in one line, with no traceback:
an unmigrated (or outdated) database names `agentd migrate`; a busy port names the port and is
found before the database is touched."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from app.db.migrate import alembic_config, upgrade
from tests.cli.conftest import Agentd
from tests.live_server import free_port
from tests.pgserver import PostgresServer


def _start(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = [command] if command == "worker" else [command, "--port", str(free_port())]
    clean = {name: value for name, value in os.environ.items() if not name.startswith("AGENTD_")}
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_fresh_sqlite_data_folder_says_to_migrate_and_is_left_untouched(
    tmp_path: Path, command: str
) -> None:
    line = _one_line(_start(command, tmp_path, {"AGENTD_DATA_DIR": str(tmp_path / "data")}))
    assert line.startswith("Error: the database at sqlite+aiosqlite:///")
    assert "is not migrated: run `agentd migrate`" in line
    assert f"`agentd {command} --migrate`" in line
    assert not (tmp_path / "data" / "agentd.db").exists()


@pytest.mark.postgres
@pytest.mark.parametrize("command", ["serve", "worker"])
def test_an_unmigrated_postgresql_database_says_to_migrate(
    tmp_path: Path, postgres: PostgresServer, command: str
) -> None:
    url = postgres.create_database(f"cli_fresh_{command}")
    line = _one_line(_start(command, tmp_path, {"AGENTD_DATABASE_URL": url}))
    assert line.startswith("Error: the database at postgresql+asyncpg://")
    assert "is not migrated: run `agentd migrate`" in line
    tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
    assert postgres.psql(tables, database=f"cli_fresh_{command}").strip() == "0"


@pytest.mark.postgres
def test_a_database_behind_the_code_names_both_revisions(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    url = postgres.create_database("cli_behind")
    scripts = ScriptDirectory.from_config(alembic_config(url))
    head = scripts.get_current_head()
    assert head is not None
    previous = scripts.get_revision(head).down_revision
    assert isinstance(previous, str)
    upgrade(url, previous)
    line = _one_line(_start("serve", tmp_path, {"AGENTD_DATABASE_URL": url}))
    assert f"is at revision {previous}, this agentd needs {head}: run `agentd migrate`" in line


def test_a_busy_port_fails_naming_it_before_the_database_is_touched(tmp_path: Path) -> None:
    database = tmp_path / "fresh.db"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "app", "serve", "--migrate", "--port", str(port)],
            cwd=tmp_path,
            env={**os.environ, "AGENTD_DATABASE_URL": f"sqlite+aiosqlite:///{database}"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    line = _one_line(done)
    assert line == (
        f"Error: port {port} on 127.0.0.1 is already in use (another agentd?): stop that "
        "process or choose another port with --port."
    )
    assert not database.exists()  # --migrate did not run: the port was checked first


def test_serving_beyond_loopback_without_auth_is_refused_in_one_line(agentd: Agentd) -> None:
    result = agentd("serve", "--host", "0.0.0.0", "--port", str(free_port()))
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: refusing to serve on 0.0.0.0 with AGENTD_AUTH=none; set AGENTD_AUTH=api_key or "
        "jwt (or bind to 127.0.0.1).\n"
    )
