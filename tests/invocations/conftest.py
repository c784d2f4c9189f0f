"""What the InvocationStore test modules share as fixtures (their helpers: `store_helpers`)."""

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.invocations.store_helpers import Backend, open_backend


@pytest.fixture
async def backend(db_engine: AsyncEngine) -> AsyncIterator[Backend]:
    """An InvocationStore and a session service on one fresh database, with sessions s1 and s2."""
    async for opened in open_backend(db_engine):
        yield opened
