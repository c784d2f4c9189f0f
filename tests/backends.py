"""Module-scoped servers on SQLite and on PostgreSQL, for test modules that run every test on
both backends against one server each (started once per module: a server's start-up is mostly
imports)."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
import pytest

from tests.conftest import fresh_pg_url, fresh_sqlite_url
from tests.live_server import LiveServer
from tests.pgserver import PostgresServer


class Served(Protocol):
    """What a module's deployment has: the server the tests talk to."""

    @property
    def server(self) -> LiveServer: ...


S = TypeVar("S", bound=Served)


def module_servers(name: str, build: Callable[[Path, str], S]) -> tuple[Any, Any, Any, Any]:
    """The fixtures `sqlite_deployment`, `postgres_deployment` (module-scoped: `build(root,
    database_url)`, its server started), `deployment` (each backend in turn) and `http` (a
    client of it). A module assigns them to those names:

        sqlite_deployment, postgres_deployment, deployment, http = module_servers("x", Deployment)
    """

    @pytest.fixture(scope="module")
    def sqlite_deployment(
        tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
    ) -> Iterator[S]:
        """A server on a migrated SQLite file of its own."""
        root = tmp_path_factory.mktemp(f"{name}-sqlite")
        served = build(root, fresh_sqlite_url(sqlite_template, root))
        served.server.start()
        yield served
        served.server.stop()

    @pytest.fixture(scope="module")
    def postgres_deployment(
        tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer, pg_template: str
    ) -> Iterator[S]:
        """A server on a migrated PostgreSQL database of its own."""
        root = tmp_path_factory.mktemp(f"{name}-postgres")
        served = build(root, fresh_pg_url(postgres, pg_template))
        served.server.start()
        yield served
        served.server.stop()

    @pytest.fixture(params=["sqlite", "postgres"])
    def deployment(request: pytest.FixtureRequest) -> S:
        """The module's server on each backend."""
        found: S = request.getfixturevalue(f"{request.param}_deployment")
        return found

    @pytest.fixture
    def http(deployment: S) -> Iterator[httpx.Client]:
        """A client of the backend's server."""
        with httpx.Client(base_url=deployment.server.url, timeout=30) as client:
            yield client

    return sqlite_deployment, postgres_deployment, deployment, http
