"""The raw writer and reader sqlite3 connections of a fast-path engine, and units run on them."""

import asyncio
import contextlib
import sqlite3
import weakref
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.sqlite.dialect import DRIVER
from app.db.sqlite.executor import FastConnection
from app.db.sqlite_config import (
    begin_immediate_delays,
    configure_sqlite_connection,
    sqlite_writer_lock,
    try_begin_immediate,
)

T = TypeVar("T")


class _SqliteConnections:
    """The raw writer and reader connections of one SQLite engine, closed when it is disposed.

    Each is opened on first use. The writer is dropped after a failed write and reopened by the
    next write (not by a read in between: SQLite opens a file it cannot write read-only, without
    an error, so a writer opened while the fault lasts would keep failing after it ended).
    """

    def __init__(self, engine: Engine, path: str) -> None:
        self._dialect = engine.dialect
        self._path = path
        self._writer: FastConnection | None = None
        self._reader: FastConnection | None = None

    @property
    def writer(self) -> FastConnection:
        if self._writer is None:
            self._writer = FastConnection(self._dialect, self._open())
        return self._writer

    @property
    def reader(self) -> FastConnection:
        if self._reader is None:
            self._reader = FastConnection(self._dialect, self._open())
        return self._reader

    def _open(self) -> sqlite3.Connection:
        raw = sqlite3.connect(self._path, check_same_thread=False)
        configure_sqlite_connection(raw)
        return raw

    def drop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(sqlite3.Error):
                writer.driver_connection.close()

    def close(self) -> None:
        self.drop_writer()
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.driver_connection.close()


_connections: "weakref.WeakKeyDictionary[Engine, _SqliteConnections]" = weakref.WeakKeyDictionary()


def uses_fast_path(db_engine: AsyncEngine) -> bool:
    """Whether units of work on this engine run on raw connections (fast-path file databases)."""
    path = db_engine.url.database
    return db_engine.dialect.driver == DRIVER and bool(path) and path != ":memory:"


def _connections_of(db_engine: AsyncEngine) -> _SqliteConnections:
    sync_engine = db_engine.sync_engine
    found = _connections.get(sync_engine)
    if found is None:
        path = db_engine.url.database
        assert path is not None
        found = _connections[sync_engine] = _SqliteConnections(sync_engine, path)
        if not event.contains(sync_engine, "engine_disposed", _close_on_dispose):
            event.listen(sync_engine, "engine_disposed", _close_on_dispose)
    return found


def _close_on_dispose(sync_engine: Engine) -> None:
    connections = _connections.pop(sync_engine, None)
    if connections is not None:
        connections.close()


async def run_write(db_engine: AsyncEngine, work: Callable[[FastConnection], T]) -> T:
    """`work` in one BEGIN IMMEDIATE transaction on the writer, behind the engine's writer lock."""
    async with sqlite_writer_lock(db_engine):
        # Taken under the lock: a write failing before this one may have replaced the writer.
        connections = _connections_of(db_engine)
        writer = connections.writer
        raw = writer.driver_connection
        try:
            await _begin_immediate(raw)
            result = work(writer)
            raw.commit()
        except BaseException as exc:
            # Also after a failed COMMIT: sqlite3 then leaves the transaction open, and the
            # next unit's BEGIN would fail on this connection.
            with contextlib.suppress(sqlite3.Error):
                if raw.in_transaction:
                    raw.rollback()
            if _is_operational(exc):
                # A connection that failed to write (the file made read-only or immutable, the
                # disk full, the file replaced) can keep failing after the cause is gone, while
                # a new one writes: the next write opens a new one, so recovery needs no restart.
                connections.drop_writer()
            raise
        return result


def run_read(db_engine: AsyncEngine, work: Callable[[FastConnection], T]) -> T:
    """`work` in one deferred read transaction (one snapshot) on the reader."""
    reader = _connections_of(db_engine).reader
    raw = reader.driver_connection
    raw.execute("BEGIN")
    try:
        return work(reader)
    finally:
        raw.rollback()


def _is_operational(exc: BaseException) -> bool:
    # sqlite3's own (raised by BEGIN and COMMIT) or wrapped by the executor as SQLAlchemy does.
    return isinstance(exc, sqlite3.OperationalError) or isinstance(
        getattr(exc, "orig", None), sqlite3.OperationalError
    )


async def _begin_immediate(raw: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE on the raw writer, sleeping (on the loop) while another process writes."""
    for delay in begin_immediate_delays():
        if try_begin_immediate(raw.execute):
            return
        await asyncio.sleep(delay)
    raw.execute("BEGIN IMMEDIATE")  # past the busy timeout: raise "locked"


__all__ = ["run_read", "run_write", "uses_fast_path"]
