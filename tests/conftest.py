"""Shared fixtures: migrated SQLite files, the throwaway PostgreSQL server, session services.

Every database a test gets is freshly migrated by Alembic (never `create_all`): a migrated
template is built once per run and each test gets a copy (a file copy on SQLite, `CREATE DATABASE
... TEMPLATE` on PostgreSQL), so tests are isolated and cheap.
"""

import itertools
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

# Every server a test starts is one process (tests signal, stop and measure its pid) unless the
# test asks for more with `--workers` (tests/api/test_workers_http.py).
os.environ.setdefault("AGENTD_WORKERS", "1")
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import create_db_engine
from app.db.migrate import upgrade
from app.sessions.base import BaseSessionService
from app.sessions.database import DatabaseSessionService
from app.sessions.in_memory import InMemorySessionService
from tests.pgserver import PostgresServer, start_postgres

_db_counter = itertools.count()
PG_TEMPLATE = "agentd_template"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole run (fails loudly if it cannot start)."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_template(postgres: PostgresServer) -> str:
    """Name of a migrated template database."""
    upgrade(postgres.create_database(PG_TEMPLATE))
    return PG_TEMPLATE


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file to copy per test."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


def fresh_sqlite_url(template: Path, directory: Path) -> str:
    """A migrated SQLite database of its own."""
    path = directory / f"agentd-{next(_db_counter)}.db"
    shutil.copyfile(template, path)
    return f"sqlite+aiosqlite:///{path}"


def fresh_pg_url(server: PostgresServer, template: str) -> str:
    """A migrated PostgreSQL database of its own."""
    return server.create_database(f"t{next(_db_counter)}", template=template)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database on each real backend."""
    if request.param == "sqlite":
        return fresh_sqlite_url(request.getfixturevalue("sqlite_template"), tmp_path)
    return fresh_pg_url(request.getfixturevalue("postgres"), request.getfixturevalue("pg_template"))


#: The database backends of the contract suites: SQLite with the fast path (`app.db.sqlite`) on
#: and off (AGENTD_SQLITE_FAST_PATH=false), and PostgreSQL, where the setting changes nothing.
DB_BACKENDS = ["sqlite", "sqlite-plain", "postgres"]


def engine_for(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> AsyncEngine:
    """A fresh, migrated database on `backend` (one of DB_BACKENDS) and an engine on it."""
    if backend == "postgres":
        url = fresh_pg_url(
            request.getfixturevalue("postgres"), request.getfixturevalue("pg_template")
        )
    else:
        url = fresh_sqlite_url(request.getfixturevalue("sqlite_template"), tmp_path)
    return create_db_engine(url, pool_size=5, sqlite_fast_path=backend != "sqlite-plain")


@pytest.fixture(params=DB_BACKENDS)
async def db_engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """An async engine on a migrated, empty database of each backend, disposed after the test."""
    engine = engine_for(request, request.param, tmp_path)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture(params=["memory", *DB_BACKENDS])
async def session_service(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseSessionService]:
    """Every SessionService implementation, each on an empty store."""
    if request.param == "memory":
        yield InMemorySessionService()
        return
    engine = engine_for(request, request.param, tmp_path)
    try:
        yield DatabaseSessionService(engine)
    finally:
        await engine.dispose()
