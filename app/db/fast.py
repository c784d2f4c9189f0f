"""Run the hot, prebuilt statements of the units of work; on SQLite, straight on the sqlite3 cursor.

Why: once SQLite ran inline (`app.db.sqlite_inline`), SQLAlchemy's per-execution machinery
(execution context, cache-key lookup, result metadata) cost ~25 us per statement against ~3 us
for sqlite3 itself, and a turn runs about twenty of them. Each statement here is compiled once
per dialect by SQLAlchemy (so the SQL text, parameter order and type processors are exactly the
ones SQLAlchemy would use); only the execution is done by hand. Other dialects go through
`Connection.execute` unchanged.

What is lost on the SQLite fast path: `before/after_cursor_execute` events (SQL echo, tracing
instrumentation) do not see these statements. Errors are wrapped exactly as SQLAlchemy wraps them
(`IntegrityError`, `OperationalError`, ...), so callers catch the same exceptions on both paths.
"""

import sqlite3
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import exc
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

Params = Mapping[str, Any]


class _Plan:
    """One statement compiled for one dialect, with its parameter order and type processors."""

    __slots__ = ("binds", "compiled", "order", "results", "row")

    def __init__(self, statement: ClauseElement, dialect: Dialect, keys: tuple[str, ...]) -> None:
        # As Core does: the parameter names pick the columns of an INSERT (or extra SET ones).
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        assert isinstance(compiled, SQLCompiler)
        self.compiled = compiled
        self.order: tuple[str, ...] = tuple(compiled.positiontup or ())
        # Tuple types (sequences of processors) never occur in these statements.
        self.binds = cast(dict[str, Callable[[Any], Any]], dict(compiled._bind_processors))
        columns = compiled._result_columns
        self.row: type[tuple[Any, ...]] | None = (
            namedtuple("Row", [c.keyname for c in columns], rename=True) if columns else None
        )
        self.results: list[Callable[[Any], Any] | None] = [
            c.type._cached_result_processor(dialect, None) for c in columns
        ]

    @property
    def sql(self) -> str:
        return self.compiled.string

    def arguments(self, params: Params) -> list[Any]:
        values = self.compiled.construct_params(params)
        binds = self.binds
        return [binds[name](values[name]) if name in binds else values[name] for name in self.order]

    def rows(self, raw: Sequence[tuple[Any, ...]]) -> list[Any]:
        assert self.row is not None
        row = self.row
        if not any(self.results):
            return [row(*values) for values in raw]
        processors = self.results
        return [
            row(*(p(v) if p is not None else v for p, v in zip(processors, values, strict=True)))
            for values in raw
        ]


_plans: dict[tuple[int, str, tuple[str, ...]], tuple[Executable, _Plan]] = {}


def _plan(statement: Executable, dialect: Dialect, params: Params) -> _Plan:
    keys = tuple(params)
    key = (id(statement), dialect.name, keys)
    cached = _plans.get(key)
    if cached is None or cached[0] is not statement:
        assert isinstance(statement, ClauseElement)
        cached = (statement, _Plan(statement, dialect, keys))
        _plans[key] = cached
    return cached[1]


def rows(db: Connection, statement: Executable, params: Params | None = None) -> list[Any]:
    """Every result row (attribute access by column name), or [] for a statement without rows."""
    if db.dialect.name != "sqlite":
        result = db.execute(statement, params)
        return list(result) if result.returns_rows else []
    params = params or {}
    plan = _plan(statement, db.dialect, params)
    raw = cast(sqlite3.Connection, db.connection.driver_connection)
    try:
        cursor = raw.execute(plan.sql, plan.arguments(params))
        fetched = cursor.fetchall() if plan.row is not None else []
    except sqlite3.Error as error:
        raise _wrapped(plan.sql, params, error) from error
    return plan.rows(fetched) if fetched else []


def first(db: Connection, statement: Executable, params: Params | None = None) -> Any | None:
    """The first row, or None."""
    found = rows(db, statement, params)
    return found[0] if found else None


def scalar(db: Connection, statement: Executable, params: Params | None = None) -> Any:
    """The first column of the first row, or None."""
    found = rows(db, statement, params)
    return found[0][0] if found else None


def execute_many(db: Connection, statement: Executable, params: list[Params]) -> None:
    """The statement once per parameter set (no result rows)."""
    if not params:
        return
    if db.dialect.name != "sqlite":
        db.execute(statement, params)
        return
    plan = _plan(statement, db.dialect, params[0])
    raw = cast(sqlite3.Connection, db.connection.driver_connection)
    try:
        if len(params) == 1:
            raw.execute(plan.sql, plan.arguments(params[0]))
        else:
            raw.executemany(plan.sql, [plan.arguments(p) for p in params])
    except sqlite3.Error as error:
        raise _wrapped(plan.sql, params, error) from error


def _wrapped(sql: str, params: Any, error: sqlite3.Error) -> exc.StatementError:
    return exc.DBAPIError.instance(sql, params, error, sqlite3.Error)


__all__ = ["execute_many", "first", "rows", "scalar"]
