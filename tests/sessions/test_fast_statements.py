"""app.db.fast gives the same rows and the same exceptions as SQLAlchemy Core, on both backends."""

from collections.abc import Callable
from typing import Any, cast

import pytest
from sqlalchemy import Table, bindparam, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from app.db import fast
from app.db.engine import write_options
from app.db.tables import StorageSession

_sessions = cast(Table, StorageSession.__table__)
_INSERT = insert(_sessions)
_BY_ID = select(_sessions).where(_sessions.c.id == bindparam("k_id"))


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


async def _in_write(engine: AsyncEngine, unit: Callable[[Connection], Any]) -> Any:
    def run() -> Any:
        with engine.sync_engine.execution_options(**write_options).begin() as connection:
            return unit(connection)

    return await greenlet_spawn(run)


async def test_rows_match_core_results_types_included(db_engine: AsyncEngine) -> None:
    state = {"n": 1, "f": 0.5, "nested": {"list": [1, "two", None]}, "text": "é"}

    def unit(db: Connection) -> tuple[Any, Any]:
        fast.execute_many(db, _INSERT, [_row("s1", state), _row("s2", {})])
        ours = fast.first(db, _BY_ID, {"k_id": "s1"})
        core = db.execute(_BY_ID, {"k_id": "s1"}).one()
        return ours, core

    ours, core = await _in_write(db_engine, unit)
    assert tuple(ours) == tuple(core)
    assert ours.state == state
    assert isinstance(ours.create_time, float)
    assert ours.pk == core.pk  # the autoincrement key was left to the database
    assert await _in_write(db_engine, lambda db: fast.first(db, _BY_ID, {"k_id": "none"})) is None
    first_id = await _in_write(
        db_engine, lambda db: fast.scalar(db, select(_sessions.c.id).order_by(_sessions.c.id))
    )
    assert first_id == "s1"


async def test_constraint_violations_raise_sqlalchemys_integrity_error(
    db_engine: AsyncEngine,
) -> None:
    await _in_write(db_engine, lambda db: fast.execute_many(db, _INSERT, [_row("dup", {})]))
    with pytest.raises(IntegrityError):
        await _in_write(db_engine, lambda db: fast.execute_many(db, _INSERT, [_row("dup", {})]))
    # the failed transaction left nothing behind and the connection is usable
    rows = await _in_write(db_engine, lambda db: fast.rows(db, select(_sessions.c.id)))
    assert [r.id for r in rows] == ["dup"]
