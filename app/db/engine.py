"""The SQLAlchemy async engine factory and the per-backend connection settings.

SQLite runs through `app.db.sqlite_inline` (sqlite3 on the loop thread; any `sqlite+...` URL is
mapped to it) with WAL (readers never block the writer), foreign keys on (cascades) and
synchronous=NORMAL (safe with WAL). The driver's own transaction handling is switched off and we
emit `BEGIN` ourselves: write transactions (see `write_options`) first take the engine's
in-process writer lock (an `asyncio.Lock`, so waiting never blocks the loop), then start with
`BEGIN IMMEDIATE`, retried with `asyncio.sleep` while another process holds SQLite's write lock,
so writers queue instead of failing with "database is locked" when a deferred reader tries to
upgrade. The lock is released when the transaction ends or its connection goes back to the pool.
PostgreSQL needs none of this.
"""

import asyncio
import sqlite3
import time
import weakref
from pathlib import Path
from typing import Any, cast

import orjson
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.util import await_only

from app.db import sqlite_inline

WRITE_OPTION = "agentd_write"

#: Execution options that mark a transaction as a writer (BEGIN IMMEDIATE on SQLite).
write_options: dict[str, Any] = {WRITE_OPTION: True}

SQLITE_BUSY_TIMEOUT_MS = 30_000

#: How long sqlite3 itself may wait on a lock. Short on purpose: it blocks the event loop, and
#: writers never rely on it (they hold the in-process lock and retry BEGIN IMMEDIATE themselves).
SQLITE_INLINE_BUSY_MS = 50

_HOLDS_WRITE_LOCK = "agentd_holds_write_lock"


def is_sqlite(url: str) -> bool:
    """Whether the URL names an SQLite database."""
    return make_url(url).get_backend_name() == "sqlite"


def _dumps(value: Any) -> str:
    # orjson: several times faster than json for the event and state columns; non-str keys are
    # stringified as json.dumps would.
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _loads(value: Any) -> Any:
    # SQLite gives JSON columns NUMERIC affinity, so a stored scalar such as `1` comes back as a
    # number, not text; the stdlib-based default passes those through, and so must we.
    if isinstance(value, int | float):
        return value
    return orjson.loads(value)


def create_db_engine(url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """Build the async engine for `url`, creating the SQLite file's folder if needed."""
    parsed = make_url(url)
    json_options: dict[str, Any] = {"json_serializer": _dumps, "json_deserializer": _loads}
    if parsed.get_backend_name() != "sqlite":
        return create_async_engine(
            url,
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_pre_ping=True,
            echo=echo,
            **json_options,
        )
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    sqlite_inline.register()
    db_engine = create_async_engine(
        parsed.set(drivername=f"sqlite+{sqlite_inline.DRIVER}"),
        pool_size=pool_size,
        max_overflow=0,
        echo=echo,
        **json_options,
    )
    _configure_sqlite(db_engine)
    return db_engine


_writer_locks: "weakref.WeakKeyDictionary[Engine, asyncio.Lock]" = weakref.WeakKeyDictionary()


def sqlite_writer_lock(db_engine: AsyncEngine) -> asyncio.Lock:
    """The in-process writer lock of an SQLite engine (every writer of the file takes it)."""
    return _writer_locks[db_engine.sync_engine]


def configure_sqlite_connection(dbapi_connection: Any) -> None:
    """Per-connection settings; also used for the raw connections of `app.db.units`."""
    # None = sqlite3 never opens transactions on its own; we issue BEGIN ourselves.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_INLINE_BUSY_MS}")
    cursor.close()


def _configure_sqlite(db_engine: AsyncEngine) -> None:
    sync_engine = db_engine.sync_engine
    writer_lock = asyncio.Lock()
    _writer_locks[sync_engine] = writer_lock

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        configure_sqlite_connection(dbapi_connection)

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        raw = cast(sqlite3.Connection, connection.connection.driver_connection)
        if not connection.get_execution_options().get(WRITE_OPTION, False):
            raw.execute("BEGIN")
            return
        await_only(writer_lock.acquire())
        connection.info[_HOLDS_WRITE_LOCK] = True
        try:
            _begin_immediate(raw)
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


def _begin_immediate(raw: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, waiting (without blocking the loop) while another process writes."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.001
    while not _try_begin_immediate(raw, deadline):
        await_only(asyncio.sleep(delay))
        delay = min(delay * 2, 0.05)


async def begin_immediate(raw: sqlite3.Connection) -> None:
    """`_begin_immediate` for callers on the event loop (outside SQLAlchemy's greenlets)."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.001
    while not _try_begin_immediate(raw, deadline):
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


def _try_begin_immediate(raw: sqlite3.Connection, deadline: float) -> bool:
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) or time.monotonic() > deadline:
            raise
        return False
    return True


def create_sessionmaker(db_engine: AsyncEngine) -> async_sessionmaker[DbSession]:
    """Sessions that keep loaded rows usable after commit (we return wire models, not rows)."""
    return async_sessionmaker(db_engine, expire_on_commit=False)


__all__ = [
    "DbSession",
    "begin_immediate",
    "configure_sqlite_connection",
    "create_db_engine",
    "create_sessionmaker",
    "is_sqlite",
    "sqlite_writer_lock",
    "write_options",
]
