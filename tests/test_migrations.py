"""Alembic owns the schema: it round-trips and matches the ORM models exactly."""

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from app.db.base import Base
from app.db.engine import create_db_engine, is_sqlite
from app.db.migrate import downgrade, upgrade
from tests.pgserver import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no schema at all."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database(f"empty_{tmp_path.name[-20:].replace('-', '_')}")


async def _table_names(url: str) -> set[str]:
    engine = create_db_engine(url)
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
    await engine.dispose()
    return names - {"alembic_version"}


async def _diff(url: str) -> list[object]:
    engine = create_db_engine(url)

    def compare(connection: Connection) -> list[object]:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "render_as_batch": is_sqlite(url)}
        )
        return list(compare_metadata(context, Base.metadata))

    async with engine.connect() as connection:
        diff = await connection.run_sync(compare)
    await engine.dispose()
    return diff


async def test_upgrade_downgrade_upgrade_round_trips(empty_db_url: str) -> None:
    upgrade(empty_db_url)
    assert await _table_names(empty_db_url) == set(Base.metadata.tables)
    downgrade(empty_db_url)
    assert await _table_names(empty_db_url) == set()
    upgrade(empty_db_url)
    assert await _table_names(empty_db_url) == set(Base.metadata.tables)


async def test_autogenerate_finds_no_difference_with_the_models(empty_db_url: str) -> None:
    upgrade(empty_db_url)
    assert await _diff(empty_db_url) == []
