"""Fixtures for the memory tests: every MemoryService implementation on an empty, migrated store."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.memory.base import BaseMemoryService
from app.memory.database import DatabaseMemoryService
from app.memory.in_memory import InMemoryMemoryService
from tests.conftest import DB_BACKENDS, engine_for


@pytest.fixture(params=["memory", *DB_BACKENDS])
async def memory_service(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseMemoryService]:
    """Every MemoryService implementation, each on an empty store."""
    if request.param == "memory":
        yield InMemoryMemoryService()
        return
    db_engine = engine_for(request, request.param, tmp_path)
    try:
        yield DatabaseMemoryService(db_engine)
    finally:
        await db_engine.dispose()
