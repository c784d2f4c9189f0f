"""Module-scoped servers of a test app on both backends, for HTTP tests that write their own
agents folder: `sqlite_server, postgres_server, http = on_both_backends("x", write_agents)`.

`write_agents(root)` writes the agents folder under `root` and returns it; each backend gets
its own migrated database and its own server (with `settings`, more AGENTD_* variables, if
given); `http` is parametrized over the two. `get_json(http, path)`: a GET that must
answer 200.
"""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_pg_url, fresh_sqlite_url
from tests.live_server import LiveServer
from tests.pgserver import PostgresServer


def _server(
    root: Path,
    database_url: str,
    write_agents: Callable[[Path], Path],
    settings: dict[str, str] | None,
) -> LiveServer:
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(write_agents(root)),
        "AGENTD_DATABASE_URL": database_url,
        **(settings or {}),
    }
    return LiveServer(root / "server", env)


def on_both_backends(
    name: str, write_agents: Callable[[Path], Path], settings: dict[str, str] | None = None
) -> tuple[Any, Any, Any]:
    """The `sqlite_server`, `postgres_server` and `http` fixtures of one test module."""

    @pytest.fixture(scope="module")
    def sqlite_server(
        tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
    ) -> Iterator[LiveServer]:
        """A server on a migrated SQLite file of its own."""
        root = tmp_path_factory.mktemp(f"{name}-sqlite")
        url = fresh_sqlite_url(sqlite_template, root)
        server = _server(root, url, write_agents, settings).start()
        yield server
        server.stop()

    @pytest.fixture(scope="module")
    def postgres_server(
        tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer, pg_template: str
    ) -> Iterator[LiveServer]:
        """A server on a migrated PostgreSQL database of its own."""
        root = tmp_path_factory.mktemp(f"{name}-postgres")
        url = fresh_pg_url(postgres, pg_template)
        server = _server(root, url, write_agents, settings).start()
        yield server
        server.stop()

    @pytest.fixture(params=["sqlite", "postgres"])
    def http(request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
        """A client of the backend's server."""
        server: LiveServer = request.getfixturevalue(f"{request.param}_server")
        with httpx.Client(base_url=server.url, timeout=30) as client:
            yield client

    return sqlite_server, postgres_server, http


def get_json(http: httpx.Client, path: str) -> Any:
    """`GET path`, which must answer 200: the JSON it answers."""
    got = http.get(path)
    assert got.status_code == 200, got.text
    return got.json()
