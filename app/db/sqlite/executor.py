"""Statements compiled once by SQLAlchemy and executed straight on a sqlite3 connection.

`FastConnection` is the connection a unit of work gets on the fast path: it satisfies
`app.db.uow.Db` like a SQLAlchemy `Connection` does, so repositories never know which one they
hold. Each statement is compiled once per dialect and parameter-name set by SQLAlchemy itself (so
the SQL text, parameter order and type processors are exactly the ones SQLAlchemy would use); only
the execution is done by hand. Plans are cached for statements registered with `register` (built
once, at import, by the repositories), so the cache is bounded by the code, not by the traffic; an
unregistered statement is compiled for its one call and forgotten.

Errors are wrapped as SQLAlchemy wraps them (`IntegrityError`, `OperationalError`, ...), so
callers catch the same exceptions on both paths.
"""

import functools
import sqlite3
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from sqlalchemy import exc
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

Params = Mapping[str, Any]
S = TypeVar("S", bound=Executable)

#: The SQLAlchemy internals this module reads, checked by `check_internals` (and a test).
COMPILED_INTERNALS = (
    "_bind_processors",
    "_result_columns",
    "positiontup",
    "construct_params",
    "post_compile_params",
)
TYPE_INTERNALS = ("_cached_result_processor",)


class _Plan:
    """One statement compiled for one dialect, with its parameter order and type processors."""

    __slots__ = ("binds", "compiled", "order", "results", "row", "sql")

    def __init__(self, statement: ClauseElement, dialect: Dialect, keys: tuple[str, ...]) -> None:
        # As Core does: the parameter names pick the columns of an INSERT (or extra SET ones).
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        assert isinstance(compiled, SQLCompiler)
        self.compiled = compiled
        self.sql: str = compiled.string
        if compiled.post_compile_params:
            # Expanding IN lists are rendered per execution by SQLAlchemy's own path only.
            raise NotImplementedError(
                "The SQLite fast path does not run expanding IN (...) parameters; "
                "write the statement with OR or a join instead."
            )
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


_registered: dict[int, Executable] = {}
_plans: dict[tuple[int, str, tuple[str, ...]], _Plan] = {}


def register(statement: S) -> S:
    """Mark a statement built once at import as cacheable; returns it unchanged."""
    _registered[id(statement)] = statement
    return statement


def _plan(statement: Executable, dialect: Dialect, params: Params) -> _Plan:
    keys = tuple(params)
    if id(statement) not in _registered:
        assert isinstance(statement, ClauseElement)
        return _Plan(statement, dialect, keys)
    key = (id(statement), dialect.name, keys)
    plan = _plans.get(key)
    if plan is None:
        assert isinstance(statement, ClauseElement)
        plan = _plans[key] = _Plan(statement, dialect, keys)
    return plan


class FastResult:
    """The rows of one execution: the part of SQLAlchemy's `Result` that repositories use."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def all(self) -> list[Any]:
        """Every row (attribute access by column name)."""
        return self._rows

    def first(self) -> Any | None:
        """The first row, or None."""
        return self._rows[0] if self._rows else None

    def scalar(self) -> Any:
        """The first column of the first row, or None."""
        return self._rows[0][0] if self._rows else None


class FastConnection:
    """A raw sqlite3 connection that executes SQLAlchemy statements (see the module docstring)."""

    def __init__(self, dialect: Dialect, driver_connection: sqlite3.Connection) -> None:
        self.dialect = dialect
        self.driver_connection = driver_connection

    @property
    def connection(self) -> "FastConnection":
        """Mirrors `Connection.connection.driver_connection` for code that needs the raw handle."""
        return self

    def execute(
        self, statement: Executable, parameters: Params | Sequence[Params] | None = None
    ) -> FastResult:
        """Run `statement` once, or once per parameter set when given a sequence of them."""
        if parameters is None or isinstance(parameters, Mapping):
            return self._execute_one(statement, parameters or {})
        if not parameters:
            return FastResult([], 0)
        plan = _plan(statement, self.dialect, parameters[0])
        raw = self.driver_connection
        try:
            if len(parameters) == 1:
                cursor = raw.execute(plan.sql, plan.arguments(parameters[0]))
            else:
                cursor = raw.executemany(plan.sql, [plan.arguments(p) for p in parameters])
        except sqlite3.Error as error:
            raise _wrapped(plan.sql, parameters, error) from error
        return FastResult([], cursor.rowcount)

    def _execute_one(self, statement: Executable, params: Params) -> FastResult:
        plan = _plan(statement, self.dialect, params)
        try:
            cursor = self.driver_connection.execute(plan.sql, plan.arguments(params))
            fetched = cursor.fetchall() if plan.row is not None else []
        except sqlite3.Error as error:
            raise _wrapped(plan.sql, params, error) from error
        return FastResult(plan.rows(fetched) if fetched else [], cursor.rowcount)


def _wrapped(sql: str, params: Any, error: sqlite3.Error) -> exc.StatementError:
    return exc.DBAPIError.instance(sql, params, error, sqlite3.Error)


@functools.cache
def check_internals() -> None:
    """Raise RuntimeError if this SQLAlchemy lacks an internal the fast path reads."""
    from sqlalchemy import column, select
    from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
    from sqlalchemy.types import Integer

    compiled = select(column("x", Integer)).compile(dialect=SQLiteDialect_pysqlite())
    missing = [name for name in COMPILED_INTERNALS if not hasattr(compiled, name)]
    missing += [name for name in TYPE_INTERNALS if not hasattr(Integer(), name)]
    if not hasattr(SQLiteDialect_pysqlite, "_is_url_file_db"):
        missing.append("SQLiteDialect_pysqlite._is_url_file_db")
    if missing:
        import sqlalchemy

        raise RuntimeError(
            f"SQLAlchemy {sqlalchemy.__version__} lacks {missing}, which the SQLite fast path "
            "uses; set AGENTD_SQLITE_FAST_PATH=false or install the pinned SQLAlchemy."
        )


__all__ = ["FastConnection", "FastResult", "check_internals", "register"]
