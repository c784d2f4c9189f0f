"""The SQLAlchemy async engine factory.

SQLite URLs (any `sqlite+...` driver) run on the fast path's inline dialect (`app.db.sqlite`)
unless `sqlite_fast_path` is False (AGENTD_SQLITE_FAST_PATH=false), in which case they run on
SQLAlchemy's stock aiosqlite dialect; both get the settings of `app.db.sqlite_config`.
PostgreSQL runs on asyncpg with a pre-pinged pool.
"""

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db import sqlite
from app.db.sqlite_config import configure_sqlite_engine


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


def create_db_engine(
    url: str, *, pool_size: int = 10, echo: bool = False, sqlite_fast_path: bool = True
) -> AsyncEngine:
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
    if sqlite_fast_path:
        sqlite.enable()
        driver = sqlite.DRIVER
    else:
        driver = "aiosqlite"
    db_engine = create_async_engine(
        parsed.set(drivername=f"sqlite+{driver}"),
        pool_size=pool_size,
        max_overflow=0,
        echo=echo,
        **json_options,
    )
    configure_sqlite_engine(db_engine)
    return db_engine


__all__ = ["create_db_engine", "is_sqlite"]
