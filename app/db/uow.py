"""The unit of work: the one way agentd runs a database transaction.

A unit is a plain synchronous function of a `Db` handed to `UnitOfWork.write` (one write
transaction, committed when the function returns, rolled back if it raises) or `.read` (one
read-only snapshot). Repositories take that `Db` and own every statement; services build units
from repository calls. Nothing inside a unit awaits, which is what lets one unit be one
transaction on every backend:

- SQLite with the fast path (`app.db.sqlite`): the function runs right on the event loop on the
  engine's raw writer or reader connection.
- SQLite without it, and PostgreSQL: the function runs in one `greenlet_spawn` on a pooled
  SQLAlchemy `Connection` (REPEATABLE READ for PostgreSQL reads, so state and events agree); the
  driver's awaits happen through SQLAlchemy's greenlet bridge.

`Db` is the part of SQLAlchemy's `Connection` that repositories may use; the fast path's
`FastConnection` implements the same, so a repository that reaches for anything else fails type
checking instead of failing only on file SQLite.
"""

import dataclasses
import logging
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sqlalchemy.engine import Dialect
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import Executable
from sqlalchemy.util import greenlet_spawn

from app.db import failpoints, local_notify, sqlite
from app.db.sqlite_config import write_options
from app.errors import DatabaseUnavailable, DuplicateKey, OutcomeUnknown, RejectedValue
from app.observability.metrics import time_transaction

logger = logging.getLogger("agentd.db")

T = TypeVar("T")

Params = Mapping[str, Any]


class Result(Protocol):
    """The rows of one execution."""

    def all(self) -> Sequence[Any]:
        """Every row (attribute access by column name)."""
        ...

    def first(self) -> Any | None:
        """The first row, or None."""
        ...

    def scalar(self) -> Any:
        """The first column of the first row, or None."""
        ...

    @property
    def rowcount(self) -> int:
        """Rows matched by an UPDATE or DELETE."""
        ...


class Db(Protocol):
    """A connection inside a unit of work (SQLAlchemy `Connection` or the fast path's)."""

    @property
    def dialect(self) -> Dialect:
        """The SQL dialect (repositories pick dialect-specific upserts by its name)."""
        ...

    def execute(
        self, statement: Executable, parameters: Params | Sequence[Params] | None = None, /
    ) -> Result:
        """Run a statement once, or once per parameter set when given a sequence of them."""
        ...


class UnitOfWork:
    """Runs read and write units on one engine."""

    def __init__(self, db_engine: AsyncEngine) -> None:
        self._db_engine = db_engine
        self._fast = sqlite.uses_fast_path(db_engine)
        self._reader = db_engine.sync_engine
        self._writer = db_engine.sync_engine.execution_options(**write_options)
        # A read unit sees one snapshot: REPEATABLE READ on PostgreSQL; an SQLite read
        # transaction is a snapshot already.
        self._snapshot = db_engine.dialect.name != "sqlite"
        #: Where the other processes on this SQLite file listen (`app.db.local_notify`).
        self._notify_directory = local_notify_directory(db_engine)

    @property
    def dialect(self) -> str:
        """The engine's dialect name (`sqlite`, `postgresql`)."""
        return self._db_engine.dialect.name

    async def write(self, operation: str, work: Callable[[Db], T]) -> T:
        """Run `work` in one write transaction (BEGIN IMMEDIATE on SQLite); commit on return.

        Raises:
            DuplicateKey: a constraint refused a write (nothing was committed).
            RejectedValue: the database refused a statement otherwise (nothing was committed).
            DatabaseUnavailable: the database could not serve (nothing was committed).
            OutcomeUnknown: the COMMIT was sent to PostgreSQL but its reply never came (the
                connection broke): the unit may or may not have committed.
        """
        with time_transaction(operation), _translated(), local_notify.collecting() as notices:
            if self._fast:
                result = await sqlite.run_write(self._db_engine, work)
            else:
                result = await greenlet_spawn(self._run_write, operation, work)
        if notices and self._notify_directory is not None:
            local_notify.send(self._notify_directory, notices)  # committed: tell the others
        if failpoints.fires("commit-reply-lost", operation):
            raise _outcome_unknown(operation, "failpoint commit-reply-lost")
        return result

    def _run_write(self, operation: str, work: Callable[[Db], T]) -> T:
        with self._writer.connect() as connection:
            try:
                transaction = connection.begin()
                try:
                    result = work(connection)
                except BaseException:
                    transaction.rollback()
                    raise
                try:
                    transaction.commit()
                except DBAPIError as exc:
                    # SQLite's COMMIT either commits or leaves nothing behind; PostgreSQL's
                    # may have committed when the connection breaks before its reply.
                    if self.dialect != "sqlite" and _is_unavailable(exc):
                        connection.invalidate()
                        raise _outcome_unknown(operation, repr(exc.orig)) from exc
                    raise
                return result
            except OperationalError:
                # A connection that failed to write (a database gone read-only, a broken file
                # handle) may keep failing after the cause is gone: the pool opens a new one
                # for the next unit.
                connection.invalidate()
                raise

    async def read(self, work: Callable[[Db], T]) -> T:
        """Run `work` in one read-only snapshot transaction."""
        with _translated():
            return await self._read(work)

    async def _read(self, work: Callable[[Db], T]) -> T:
        if self._fast:
            return sqlite.run_read(self._db_engine, work)

        def run() -> T:
            with self._reader.connect() as connection:
                if self._snapshot:
                    connection.execution_options(isolation_level="REPEATABLE READ")
                with connection.begin():
                    return work(connection)

        return await greenlet_spawn(run)


def local_notify_directory(db_engine: AsyncEngine) -> Path | None:
    """The notification directory of an SQLite file database (None for PostgreSQL, which
    notifies by itself, and for an in-memory database, which no other process shares)."""
    database = db_engine.url.database
    if db_engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    return local_notify.notify_directory(database)


def from_row(cls: type[T], row: Any) -> T:
    """The dataclass `cls` built from the same-named columns of a result row."""
    return cls(**{f.name: getattr(row, f.name) for f in dataclasses.fields(cls)})  # type: ignore[arg-type]


@contextmanager
def _translated() -> Iterator[None]:
    # Services must not know SQLAlchemy's exception tree (only app.db imports SQLAlchemy). What
    # the request's values caused is theirs to name (a taken key, a value the column refuses);
    # a database that cannot be reached or cannot write is a 503 for every route alike, and the
    # driver's text (hosts, paths, SQL) goes to the log only.
    try:
        yield
    except IntegrityError as exc:
        raise DuplicateKey(str(exc.orig)) from exc
    except DBAPIError as exc:
        if _is_unavailable(exc):
            raise _unavailable(exc) from exc
        raise RejectedValue(str(exc.orig)) from exc
    except (sqlite3.OperationalError, PoolTimeout, OSError) as exc:
        # Raised outside a statement: BEGIN or COMMIT on the fast path's raw connection, a pool
        # that cannot hand out a connection, a refused or reset socket.
        raise _unavailable(exc) from exc


#: SQLSTATE classes of a database that cannot serve now: connection exception, insufficient
#: resources (disk full, too many connections), operator intervention (shutdown, starting up),
#: system error. Others (22, data exception: a NUL in text) are the value's fault.
_UNAVAILABLE_SQLSTATE_CLASSES = frozenset({"08", "53", "57", "58"})


def _is_unavailable(exc: DBAPIError) -> bool:
    if exc.connection_invalidated:
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        return sqlstate[:2] in _UNAVAILABLE_SQLSTATE_CLASSES
    if isinstance(exc.orig, sqlite3.Error):
        # Read-only or immutable file, disk I/O error, locked past the busy timeout, cannot
        # open; sqlite3's other errors (a value too big, a bad binding) are the value's fault.
        return isinstance(exc.orig, sqlite3.OperationalError)
    return isinstance(exc, OperationalError | InterfaceError) and not isinstance(exc, DataError)


def _outcome_unknown(operation: str, cause: str) -> OutcomeUnknown:
    logger.warning("the commit of %s was not confirmed: %s", operation, cause)
    return OutcomeUnknown(
        "The database did not confirm the commit of this request: it may or may not have "
        "taken effect. Look the resource up before trying again, or retry with the same "
        "Idempotency-Key."
    )


def _unavailable(exc: BaseException) -> DatabaseUnavailable:
    logger.warning("database unavailable: %s: %s", type(exc).__name__, exc)
    return DatabaseUnavailable()


__all__ = ["Db", "Params", "Result", "UnitOfWork", "from_row"]
