"""What every SQLite engine needs, fast path or not: pragmas, the writer lock, BEGIN IMMEDIATE.

WAL (readers never block the writer), foreign keys on (cascades) and synchronous=NORMAL (safe
with WAL). The driver's own transaction handling is off and we emit `BEGIN` ourselves: write
transactions (see `write_options`) first take the engine's in-process writer lock (an
`asyncio.Lock`, so waiting never blocks the loop), then start with `BEGIN IMMEDIATE`, retried with
`asyncio.sleep` while another process holds SQLite's write lock, so writers queue instead of
failing with "database is locked" when a deferred reader tries to upgrade. The lock is released
when the transaction ends or its connection goes back to the pool. PostgreSQL needs none of this.
"""

import asyncio
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.util import await_only

WRITE_OPTION = "agentd_write"

#: Execution options that mark a transaction as a writer (BEGIN IMMEDIATE on SQLite).
write_options: dict[str, Any] = {WRITE_OPTION: True}

SQLITE_BUSY_TIMEOUT_MS = 30_000

#: How long sqlite3 itself may wait on a lock. Short on purpose: on the fast path it blocks the
#: event loop, and writers never rely on it (they hold the in-process lock and retry BEGIN
#: IMMEDIATE themselves).
SQLITE_INLINE_BUSY_MS = 50

_HOLDS_WRITE_LOCK = "agentd_holds_write_lock"

_writer_locks: "weakref.WeakKeyDictionary[Engine, asyncio.Lock]" = weakref.WeakKeyDictionary()


def sqlite_writer_lock(db_engine: AsyncEngine) -> asyncio.Lock:
    """The in-process writer lock of an SQLite engine (every writer of the file takes it)."""
    return _writer_locks[db_engine.sync_engine]


def configure_sqlite_connection(dbapi_connection: Any) -> None:
    """Per-connection settings; also used for the fast path's raw connections."""
    # None = the driver never opens transactions on its own; we issue BEGIN ourselves.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_INLINE_BUSY_MS}")
    cursor.close()


def configure_sqlite_engine(db_engine: AsyncEngine) -> None:
    """Install the connect/begin/commit hooks of the module docstring on an SQLite engine."""
    sync_engine = db_engine.sync_engine
    writer_lock = asyncio.Lock()
    _writer_locks[sync_engine] = writer_lock

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        configure_sqlite_connection(dbapi_connection)

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        if not connection.get_execution_options().get(WRITE_OPTION, False):
            connection.exec_driver_sql("BEGIN")
            return
        await_only(writer_lock.acquire())
        connection.info[_HOLDS_WRITE_LOCK] = True
        try:
            _begin_immediate(connection)
        except BaseException:
            _release(connection.info)
            raise

    def _release(info: dict[Any, Any]) -> None:
        if info.pop(_HOLDS_WRITE_LOCK, False):
            writer_lock.release()

    # Commit/rollback events fire just before the driver call, which runs synchronously right
    # after, so no other task can start a writer in between. The checkin hook is the backstop
    # for a connection that leaves without either (invalidated, closed mid-transaction).
    event.listen(sync_engine, "commit", lambda conn: _release(conn.info))
    event.listen(sync_engine, "rollback", lambda conn: _release(conn.info))

    @event.listens_for(sync_engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        _release(record.info)


def _begin_immediate(connection: Connection) -> None:
    """BEGIN IMMEDIATE on a SQLAlchemy connection, sleeping (in the greenlet) while locked."""
    for delay in begin_immediate_delays():
        if try_begin_immediate(connection.exec_driver_sql):
            return
        await_only(asyncio.sleep(delay))
    connection.exec_driver_sql("BEGIN IMMEDIATE")  # past the busy timeout: raise "locked"


def begin_immediate_delays() -> Iterator[float]:
    """Back-off delays between BEGIN IMMEDIATE attempts while another process writes."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.001
    while time.monotonic() <= deadline:
        yield delay
        delay = min(delay * 2, 0.05)


def try_begin_immediate(execute: Callable[[str], object]) -> bool:
    """Start a write transaction; False if another process holds SQLite's write lock."""
    try:
        execute("BEGIN IMMEDIATE")
    except (sqlite3.OperationalError, OperationalError) as exc:
        if "locked" not in str(exc):
            raise
        return False
    return True


__all__ = [
    "begin_immediate_delays",
    "configure_sqlite_connection",
    "configure_sqlite_engine",
    "sqlite_writer_lock",
    "try_begin_immediate",
    "write_options",
]
