"""The fast path's executor gives the same rows and the same exceptions as SQLAlchemy Core.

Units run through `app.db.sqlite.run_write` on fast-path engines (the executor) and on a
SQLAlchemy `Connection` elsewhere, so on every backend of the `db_engine` fixture the same
statements must give the same rows; Core's own answer is read back through SQLAlchemy.
"""

from collections.abc import Callable
from typing import Any, cast

import pytest
import sqlalchemy
from sqlalchemy import Table, bindparam, insert, select
from sqlalchemy.dialects.sqlite import pysqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from app.db import sqlite
from app.db.sqlite.executor import COMPILED_INTERNALS, TYPE_INTERNALS, check_internals
from app.db.sqlite_config import write_options
from app.db.tables import StorageSession
from app.db.uow import Db

_sessions = cast(Table, StorageSession.__table__)
_INSERT = sqlite.register(insert(_sessions))
_BY_ID = sqlite.register(select(_sessions).where(_sessions.c.id == bindparam("k_id")))


def _row(session_id: str, state: dict[str, Any]) -> dict[str, Any]:
    return {
        "app_name": "a",
        "user_id": "u",
        "id": session_id,
        "state": state,
        "last_seq": 0,
        "create_time": 1.5,
        "update_time": 2.25,
    }


async def _in_write(engine: AsyncEngine, unit: Callable[[Db], Any]) -> Any:
    """Run `unit` as the unit of work would, without translating the driver's exceptions."""
    if sqlite.uses_fast_path(engine):
        return await sqlite.run_write(engine, unit)

    def run() -> Any:
        with engine.sync_engine.execution_options(**write_options).begin() as connection:
            return unit(connection)

    return await greenlet_spawn(run)


async def _core(engine: AsyncEngine, statement: Any, params: dict[str, Any]) -> Any:
    async with engine.connect() as connection:
        return (await connection.execute(statement, params)).one()


async def test_rows_match_core_results_types_included(db_engine: AsyncEngine) -> None:
    state = {"n": 1, "f": 0.5, "nested": {"list": [1, "two", None]}, "text": "é"}

    def unit(db: Db) -> Any:
        db.execute(_INSERT, [_row("s1", state), _row("s2", {})])
        return db.execute(_BY_ID, {"k_id": "s1"}).first()

    ours = await _in_write(db_engine, unit)
    core = await _core(db_engine, _BY_ID, {"k_id": "s1"})
    assert tuple(ours) == tuple(core)
    assert ours.state == state
    assert isinstance(ours.create_time, float)
    assert ours.pk == core.pk  # the autoincrement key was left to the database
    assert (
        await _in_write(db_engine, lambda db: db.execute(_BY_ID, {"k_id": "none"}).first()) is None
    )
    first_id = await _in_write(
        db_engine,
        lambda db: db.execute(select(_sessions.c.id).order_by(_sessions.c.id)).scalar(),
    )
    assert first_id == "s1"


async def test_constraint_violations_raise_sqlalchemys_integrity_error(
    db_engine: AsyncEngine,
) -> None:
    await _in_write(db_engine, lambda db: db.execute(_INSERT, [_row("dup", {})]))
    with pytest.raises(IntegrityError):
        await _in_write(db_engine, lambda db: db.execute(_INSERT, [_row("dup", {})]))
    # the failed transaction left nothing behind and the connection is usable
    rows = await _in_write(db_engine, lambda db: db.execute(select(_sessions.c.id)).all())
    assert [r.id for r in rows] == ["dup"]


def test_sqlalchemy_still_has_the_internals_the_fast_path_reads() -> None:
    """Fails loudly on an SQLAlchemy upgrade that moves them (the pin is >=2.1,<2.2)."""
    check_internals()
    compiled = select(_sessions).compile(dialect=pysqlite.dialect())
    for name in COMPILED_INTERNALS:
        assert hasattr(compiled, name), f"SQLAlchemy {sqlalchemy.__version__} lost {name}"
    for name in TYPE_INTERNALS:
        assert hasattr(sqlalchemy.types.Integer(), name), name
    assert sqlalchemy.__version__.startswith("2.1."), sqlalchemy.__version__


def test_only_registered_statements_are_cached() -> None:
    """The plan cache is bounded by the statements registered at import, not by traffic."""
    from app.db.sqlite import executor

    before = len(executor._plans)
    conn = sqlite3_connection()
    fast = executor.FastConnection(pysqlite.dialect(), conn)
    for i in range(50):
        fast.execute(select(sqlalchemy.literal(i)))  # a new statement object each time
    assert len(executor._plans) == before
    fast.execute(_BY_ID_LITERAL, {"k_id": "x"})
    fast.execute(_BY_ID_LITERAL, {"k_id": "y"})
    assert len(executor._plans) == before + 1


def test_expanding_in_parameters_are_refused_loudly() -> None:
    """An IN list would need SQLAlchemy's per-execution rendering, which the executor skips."""
    from app.db.sqlite import executor

    fast = executor.FastConnection(pysqlite.dialect(), sqlite3_connection())
    statement = select(sqlalchemy.literal(1)).where(sqlalchemy.literal("a").in_(["a", "b"]))
    with pytest.raises(NotImplementedError):
        fast.execute(statement)


_BY_ID_LITERAL = sqlite.register(select(sqlalchemy.literal(1)).where(bindparam("k_id") == "x"))


def sqlite3_connection() -> Any:
    import sqlite3

    return sqlite3.connect(":memory:")
