"""Fixtures for the memory tests: every MemoryService implementation on an empty, migrated store."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

# Registers StorageMemoryEntry on Base.metadata until app.db.tables imports it itself.
from app.db.engine import create_db_engine
from app.memory.base import BaseMemoryService
from app.memory.database import DatabaseMemoryService
from app.memory.in_memory import InMemoryMemoryService
from tests.conftest import fresh_pg_url, fresh_sqlite_url


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def memory_service(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseMemoryService]:
    """Every MemoryService implementation, each on an empty store."""
    if request.param == "memory":
        yield InMemoryMemoryService()
        return
    if request.param == "sqlite":
        url = fresh_sqlite_url(request.getfixturevalue("sqlite_template"), tmp_path)
    else:
        url = fresh_pg_url(
            request.getfixturevalue("postgres"), request.getfixturevalue("pg_template")
        )
    db_engine = create_db_engine(url, pool_size=5)
    try:
        yield DatabaseMemoryService(db_engine)
    finally:
        await db_engine.dispose()
