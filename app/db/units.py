"""Units of work: a whole transaction run as one synchronous function in one greenlet.

Why: SQLAlchemy's asyncio layer spawns a greenlet for every awaited step (connect, begin, each
execute, commit, close), so a two-statement append cost about seven greenlet round trips before
any SQL ran. The hot paths (append an event, load a session, create/finish an invocation,
allocate an artifact version) instead hand one plain function to `greenlet_spawn` and use the sync
`Connection` inside it: on PostgreSQL the driver's awaits still happen (asyncpg, via the same
greenlet bridge), on SQLite (`app.db.sqlite_inline`) nothing is awaited but the writer lock.
"""

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from app.db.engine import write_options
from app.observability.metrics import time_transaction

T = TypeVar("T")


class Units:
    """Runs read and write units of work on one engine."""

    def __init__(self, db_engine: AsyncEngine) -> None:
        self._reader = db_engine.sync_engine
        self._writer = db_engine.sync_engine.execution_options(**write_options)
        # A read unit sees one snapshot: REPEATABLE READ on PostgreSQL; an SQLite read
        # transaction is a snapshot already.
        self._snapshot = db_engine.dialect.name != "sqlite"

    async def write(self, operation: str, unit: Callable[[Connection], T]) -> T:
        """Run `unit` in one write transaction (BEGIN IMMEDIATE on SQLite); commit on return."""

        def run() -> T:
            with self._writer.begin() as connection:
                return unit(connection)

        with time_transaction(operation):
            return await greenlet_spawn(run)

    async def read(self, unit: Callable[[Connection], T]) -> T:
        """Run `unit` in one read-only snapshot transaction."""

        def run() -> T:
            with self._reader.connect() as connection:
                if self._snapshot:
                    connection.execution_options(isolation_level="REPEATABLE READ")
                with connection.begin():
                    return unit(connection)

        return await greenlet_spawn(run)


__all__ = ["Units"]
