"""An app per test on a fresh migrated database, driven through Starlette's TestClient."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.conftest import fresh_pg_url
from tests.live_server import GatedProcesses
from tests.pgserver import PostgresServer
from tests.shipped_apps import shipped_agents_dir


@pytest.fixture
def api_settings(db_url: str, tmp_path: Path) -> Settings:
    """Settings on the test database, with an agents dir of the shipped apps."""
    return Settings(
        database_url=db_url,
        data_dir=tmp_path / "data",
        agents_dir=shipped_agents_dir(tmp_path / "agents"),
        max_request_bytes=64 * 1024,
    )


@pytest.fixture
def client(api_settings: Settings) -> Iterator[TestClient]:
    """A client of a running app (lifespan entered)."""
    with TestClient(create_app(api_settings)) as test_client:
        yield test_client


@pytest.fixture(params=["sqlite", "postgres"])
def gated_processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GatedProcesses]:
    """Server processes on one fresh SQLite file, then on one fresh PostgreSQL database; all
    stopped at the end."""
    database_url = None
    if request.param == "postgres":
        postgres: PostgresServer = request.getfixturevalue("postgres")
        database_url = fresh_pg_url(postgres, request.getfixturevalue("pg_template"))
    processes = GatedProcesses(tmp_path, database_url)
    yield processes
    processes.stop_all()
