"""The SQLite fast path: three pieces that make SQLite cheap on the event loop, and why.

agentd's transactions are point reads and writes of small rows that take SQLite tens of
microseconds; the machinery around them cost far more than the SQL. Three pieces remove it, each
switched off together by AGENTD_SQLITE_FAST_PATH=false (then SQLite runs on SQLAlchemy's stock
aiosqlite dialect, and units of work on its ordinary connections):

1. `dialect`: the `sqlite+agentd` dialect runs sqlite3 on the event loop thread instead of
   sending every statement to aiosqlite's helper thread and back (a future, a queue put, a thread
   wake-up and a loop wake-up per statement). It is safe because nothing waits on SQLite while
   holding the loop: writers are serialized in the process by an `asyncio.Lock`, and a `BEGIN
   IMMEDIATE` that finds another *process* writing is retried with `asyncio.sleep`
   (`app.db.sqlite_config`). SQLAlchemy's async engine needs `dialect.is_async`, and
   `AsyncConnection.execute` insists that the call awaited something: each statement awaits an
   already finished coroutine (two greenlet switches, no trip through the loop).
2. `executor`: statements compiled once by SQLAlchemy (same SQL, parameter order, type processors
   and exception types) and executed straight on the sqlite3 cursor, skipping SQLAlchemy's
   per-execution context, cache-key lookup and result metadata. It reads compiled-statement
   internals (`_bind_processors`, `_result_columns`, `positiontup`, `_cached_result_processor`);
   hence SQLAlchemy is pinned to its minor version (`>=2.1,<2.2`) and `check_internals` (run when
   a fast engine is built, and by tests/db/test_sqlite_fast_path.py) fails loudly if they move.
   Plans are cached only for statements registered at import, so the cache is bounded.
3. `connections`: a unit of work runs on one of two raw sqlite3 connections kept per engine (a
   writer behind the engine's writer lock, a reader in a deferred snapshot), with no pool checkout
   and no SQLAlchemy transaction object around it. Nothing in a unit awaits, so a unit never
   interleaves with another on the same connection.

What is lost: `before/after_cursor_execute` events (SQL echo, tracing instrumentation) do not see
fast-path statements; turn the fast path off to see them.
"""

from app.db.sqlite.connections import run_read, run_write, uses_fast_path
from app.db.sqlite.dialect import DRIVER
from app.db.sqlite.dialect import register as _register_dialect
from app.db.sqlite.executor import FastConnection, check_internals, register


def enable() -> None:
    """Make `sqlite+agentd://` resolvable, after checking the internals it relies on."""
    check_internals()
    _register_dialect()


__all__ = [
    "DRIVER",
    "FastConnection",
    "check_internals",
    "enable",
    "register",
    "run_read",
    "run_write",
    "uses_fast_path",
]
