"""The SQLAlchemy async engine factory and the per-backend connection settings.

SQLite: WAL (readers never block the writer), foreign keys on (cascades), synchronous=NORMAL (safe
with WAL) and a busy timeout. The driver's own transaction handling is switched off and we emit
`BEGIN` ourselves: write transactions (see `write_options`) start with `BEGIN IMMEDIATE`, so two
writers queue on the busy timeout instead of failing with "database is locked" when a deferred
reader tries to upgrade. PostgreSQL needs none of this.
"""

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

WRITE_OPTION = "agentd_write"

#: Execution options that mark a transaction as a writer (BEGIN IMMEDIATE on SQLite).
write_options: dict[str, Any] = {WRITE_OPTION: True}

SQLITE_BUSY_TIMEOUT_MS = 30_000


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
    db_engine = create_async_engine(
        url, pool_size=pool_size, max_overflow=0, echo=echo, **json_options
    )
    _configure_sqlite(db_engine)
    return db_engine


def _configure_sqlite(db_engine: AsyncEngine) -> None:
    sync_engine = db_engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # aiosqlite exposes the sqlite3 isolation_level; None = we issue BEGIN ourselves.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        writer = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")


def create_sessionmaker(db_engine: AsyncEngine) -> async_sessionmaker[DbSession]:
    """Sessions that keep loaded rows usable after commit (we return wire models, not rows)."""
    return async_sessionmaker(db_engine, expire_on_commit=False)


__all__ = ["DbSession", "create_db_engine", "create_sessionmaker", "is_sqlite", "write_options"]
