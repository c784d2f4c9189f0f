"""Units of work: a whole transaction run as one synchronous function.

Why: SQLAlchemy's asyncio layer spawns a greenlet for every awaited step (connect, begin, each
execute, commit, close), so a two-statement append cost about seven greenlet round trips before
any SQL ran. The hot paths (append an event, load a session, create/finish an invocation,
allocate an artifact version, look up an API key) instead hand one plain function to the
database, whose statements go through `app.db.fast`:

- PostgreSQL: the function runs in one `greenlet_spawn` on a pooled sync `Connection`; the
  driver's awaits (asyncpg) happen through SQLAlchemy's greenlet bridge.
- SQLite (file databases): the function runs right on the event loop on one of two raw sqlite3
  connections this module keeps per engine, a writer and a reader, with no pool checkout and no
  SQLAlchemy transaction object around it (~40 us per transaction saved, 8 transactions a turn).
  The writer takes the engine's in-process writer lock (`sqlite_writer_lock`, shared with every
  SQLAlchemy writer of the engine) and `BEGIN IMMEDIATE`, waiting with `asyncio.sleep` while
  another process writes. A read unit runs in one deferred transaction (one snapshot).
  Nothing in a unit awaits, so a unit never interleaves with another on the same connection.
"""

import sqlite3
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from app.db.engine import (
    begin_immediate,
    configure_sqlite_connection,
    sqlite_writer_lock,
    write_options,
)
from app.observability.metrics import time_transaction

T = TypeVar("T")


class RawConnection:
    """What `app.db.fast` needs of a connection (`dialect`, `connection.driver_connection`)."""

    def __init__(self, dialect: Dialect, driver_connection: sqlite3.Connection) -> None:
        self.dialect = dialect
        self.driver_connection = driver_connection

    @property
    def connection(self) -> "RawConnection":
        return self


class _SqliteConnections:
    """The raw writer and reader connections of one SQLite engine, closed when it is disposed."""

    def __init__(self, engine: Engine, path: str) -> None:
        self.writer = RawConnection(engine.dialect, self._open(path))
        self.reader = RawConnection(engine.dialect, self._open(path))

    @staticmethod
    def _open(path: str) -> sqlite3.Connection:
        raw = sqlite3.connect(path, check_same_thread=False)
        configure_sqlite_connection(raw)
        return raw

    def close(self) -> None:
        self.writer.driver_connection.close()
        self.reader.driver_connection.close()


_connections: "weakref.WeakKeyDictionary[Engine, _SqliteConnections]" = weakref.WeakKeyDictionary()


def _sqlite_connections(db_engine: AsyncEngine) -> _SqliteConnections | None:
    sync_engine = db_engine.sync_engine
    path = db_engine.url.database
    if db_engine.dialect.name != "sqlite" or not path or path == ":memory:":
        return None
    found = _connections.get(sync_engine)
    if found is None:
        found = _connections[sync_engine] = _SqliteConnections(sync_engine, path)

        def _close(_engine: Engine) -> None:
            connections = _connections.pop(sync_engine, None)
            if connections is not None:
                connections.close()

        event.listen(sync_engine, "engine_disposed", _close)
    return found


class Units:
    """Runs read and write units of work on one engine."""

    def __init__(self, db_engine: AsyncEngine) -> None:
        self._db_engine = db_engine
        self._reader = db_engine.sync_engine
        self._writer = db_engine.sync_engine.execution_options(**write_options)
        # A read unit sees one snapshot: REPEATABLE READ on PostgreSQL; an SQLite read
        # transaction is a snapshot already.
        self._snapshot = db_engine.dialect.name != "sqlite"

    async def write(self, operation: str, unit: Callable[[Any], T]) -> T:
        """Run `unit` in one write transaction (BEGIN IMMEDIATE on SQLite); commit on return."""
        with time_transaction(operation):
            sqlite = _sqlite_connections(self._db_engine)
            if sqlite is not None:
                return await self._write_sqlite(sqlite.writer, unit)

            def run() -> T:
                with self._writer.begin() as connection:
                    return unit(connection)

            return await greenlet_spawn(run)

    async def read(self, unit: Callable[[Any], T]) -> T:
        """Run `unit` in one read-only snapshot transaction."""
        sqlite = _sqlite_connections(self._db_engine)
        if sqlite is not None:
            raw = sqlite.reader.driver_connection
            raw.execute("BEGIN")
            try:
                return unit(sqlite.reader)
            finally:
                raw.rollback()

        def run() -> T:
            with self._reader.connect() as connection:
                if self._snapshot:
                    connection.execution_options(isolation_level="REPEATABLE READ")
                with connection.begin():
                    return unit(connection)

        return await greenlet_spawn(run)

    async def _write_sqlite(self, writer: RawConnection, unit: Callable[[Any], T]) -> T:
        raw = writer.driver_connection
        async with sqlite_writer_lock(self._db_engine):
            await begin_immediate(raw)
            try:
                result = unit(writer)
                raw.commit()
            except BaseException:
                # Also after a failed COMMIT: sqlite3 then leaves the transaction open, and the
                # next unit's BEGIN would fail on this connection.
                if raw.in_transaction:
                    raw.rollback()
                raise
            return result


__all__ = ["RawConnection", "Units"]
