"""The `sqlite+agentd` dialect: pysqlite declared async, sqlite3 run on the event loop thread.

Why it is safe and why it is faster: see `app.db.sqlite`.
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
