"""An asyncio SQLite dialect that runs sqlite3 on the event loop thread (`sqlite+agentd`).

Why: aiosqlite sends every statement to a helper thread and back; on the /run path that hop, not
SQLite, was the larger part of the database's CPU (a turn runs ~30 statements, each statement a
future, a queue put, a thread wake-up and a loop wake-up). Our statements are point reads and
writes of small rows in WAL mode that take tens of microseconds, so running them inline is
cheaper than handing them off, and the loop is never blocked for longer than one statement.

What keeps this safe (see `app.db.engine`): writers are serialized inside the process by an
`asyncio.Lock` taken in the `begin` event (a writer that awaits mid-transaction makes the next
writer wait asynchronously, never on SQLite's busy handler, which would block the loop), and a
`BEGIN IMMEDIATE` that finds another *process* writing is retried with `asyncio.sleep`, so a
second process holding the lock never stalls this one's loop either.

SQLAlchemy's async engine needs `dialect.is_async`, and its Core `AsyncConnection.execute`
insists that the call awaited something: each statement therefore awaits an already finished
coroutine (two greenlet switches, no trip through the loop).
"""

import sqlite3
from typing import Any

from sqlalchemy import pool
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.engine import URL
from sqlalchemy.util.concurrency import await_only, in_greenlet

DRIVER = "agentd"


async def _done() -> None:
    return None


def _touch_loop() -> None:
    if in_greenlet():
        await_only(_done())


class _Cursor(sqlite3.Cursor):
    """sqlite3's cursor plus the one coroutine SQLAlchemy's async results call on it."""

    async def _async_soft_close(self) -> None:
        return None


class _Connection(sqlite3.Connection):
    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)


class SQLiteDialectInline(SQLiteDialect_pysqlite):
    """pysqlite, declared async so `create_async_engine` accepts it."""

    driver = DRIVER
    is_async = True
    supports_statement_cache = True

    @classmethod
    def get_pool_class(cls, url: URL) -> type[pool.Pool]:
        if cls._is_url_file_db(url):
            return pool.AsyncAdaptedQueuePool
        return pool.StaticPool

    def create_connect_args(self, url: URL) -> Any:
        args, kwargs = super().create_connect_args(url)
        # Connections are opened and used on the loop thread, but the pool may close one from
        # the garbage collector's thread at shutdown.
        kwargs["check_same_thread"] = False
        kwargs["factory"] = _Connection
        return args, kwargs

    def do_execute(self, cursor: Any, statement: Any, parameters: Any, context: Any = None) -> None:
        super().do_execute(cursor, statement, parameters, context)  # type: ignore[no-untyped-call]
        _touch_loop()

    def do_execute_no_params(self, cursor: Any, statement: Any, context: Any = None) -> None:
        super().do_execute_no_params(cursor, statement, context)  # type: ignore[no-untyped-call]
        _touch_loop()

    def do_executemany(
        self, cursor: Any, statement: Any, parameters: Any, context: Any = None
    ) -> None:
        super().do_executemany(cursor, statement, parameters, context)  # type: ignore[no-untyped-call]
        _touch_loop()


def register() -> None:
    """Make `sqlite+agentd://` resolvable (idempotent)."""
    registry.register(f"sqlite.{DRIVER}", __name__, "SQLiteDialectInline")


__all__ = ["DRIVER", "SQLiteDialectInline", "register"]
