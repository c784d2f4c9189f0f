"""SQLite writers queue without blocking the event loop, and never deadlock, on both paths.

sqlite3 runs on the loop thread (app.db.sqlite.dialect), so SQLite's own busy handler must never be
what a writer waits on: in-process writers queue on the engine's asyncio lock, and a writer that
finds another process holding the database lock retries with asyncio.sleep.
"""

import asyncio
import functools
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db import engine as engine_module
from app.db.sqlite_config import write_options


@pytest.fixture(params=["fast", "plain"])
def create_db_engine(request: pytest.FixtureRequest) -> Callable[..., AsyncEngine]:
    """The engine factory with the SQLite fast path on (inline dialect) and off (aiosqlite)."""
    return functools.partial(
        engine_module.create_db_engine, sqlite_fast_path=request.param == "fast"
    )


DDL = "CREATE TABLE t (id INTEGER PRIMARY KEY, who TEXT NOT NULL)"


async def _ticks_while(work: asyncio.Future[None] | asyncio.Task[None]) -> int:
    """How often the loop ran another task while `work` was pending."""
    ticks = 0
    while not work.done():
        await asyncio.sleep(0.002)
        ticks += 1
    await work
    return ticks


async def test_writers_that_await_mid_transaction_queue_instead_of_failing(
    tmp_path: Path, create_db_engine: Callable[..., AsyncEngine]
) -> None:
    engine = create_db_engine(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}", pool_size=5)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(DDL))
        order: list[str] = []

        async def writer(name: str) -> None:
            async with engine.connect() as conn:
                conn = await conn.execution_options(**write_options)
                async with conn.begin():
                    order.append(f"{name} in")
                    await conn.execute(text("INSERT INTO t (who) VALUES (:w)"), {"w": name})
                    # Far longer than the driver's busy timeout: the next writer must wait on
                    # the lock, not on SQLite.
                    await asyncio.sleep(0.2)
                    order.append(f"{name} out")

        await asyncio.gather(*(writer(f"w{i}") for i in range(4)))
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT who FROM t ORDER BY id"))).scalars().all()
    finally:
        await engine.dispose()
    assert sorted(rows) == ["w0", "w1", "w2", "w3"]
    # Strictly one writer at a time: every "in" is followed by its own "out".
    assert all(order[i][:2] == order[i + 1][:2] for i in range(0, len(order), 2))


async def test_a_failed_write_transaction_releases_the_writer_lock(
    tmp_path: Path, create_db_engine: Callable[..., AsyncEngine]
) -> None:
    engine = create_db_engine(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text(DDL))
        for _ in range(3):
            try:
                async with engine.connect() as conn:
                    conn = await conn.execution_options(**write_options)
                    async with conn.begin():
                        await conn.execute(text("INSERT INTO t (id, who) VALUES (1, 'x')"))
                        raise RuntimeError("boom")
            except RuntimeError:
                pass
        async with engine.connect() as conn:
            conn = await conn.execution_options(**write_options)
            async with conn.begin():
                await asyncio.wait_for(
                    conn.execute(text("INSERT INTO t (id, who) VALUES (1, 'y')")), timeout=5
                )
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT who FROM t"))).scalars().all()
    finally:
        await engine.dispose()
    assert rows == ["y"]


async def test_a_writer_waits_for_another_process_without_blocking_the_loop(
    tmp_path: Path, create_db_engine: Callable[..., AsyncEngine]
) -> None:
    path = tmp_path / "a.db"
    engine = create_db_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text(DDL))
        # Another connection outside the engine (as another process would) holds the write
        # lock for 0.4 s, six times the busy timeout sqlite3 itself is given.
        holding = threading.Event()

        def other_process() -> None:
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            other.execute("INSERT INTO t (who) VALUES ('other')")
            holding.set()
            threading.Event().wait(0.4)
            other.execute("COMMIT")
            other.close()

        thread = threading.Thread(target=other_process)
        thread.start()
        await asyncio.to_thread(holding.wait)

        async def ours() -> None:
            async with engine.connect() as conn:
                conn = await conn.execution_options(**write_options)
                async with conn.begin():
                    await conn.execute(text("INSERT INTO t (who) VALUES ('ours')"))

        ticks = await _ticks_while(asyncio.ensure_future(ours()))
        await asyncio.to_thread(thread.join)
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT who FROM t ORDER BY id"))).scalars().all()
    finally:
        await engine.dispose()
    assert rows == ["other", "ours"]
    # The loop kept running other tasks while our writer waited (a blocked loop gives ~0).
    assert ticks >= 20


async def test_units_and_orm_writers_share_the_writer_lock(tmp_path: Path) -> None:
    """A unit of work (raw sqlite3 connection) waits for an SQLAlchemy writer of the same engine
    that awaits mid-transaction, and both commit; the raw connections close with the engine."""
    from app.db.sqlite import connections as units_module
    from app.db.uow import UnitOfWork as Units

    engine = engine_module.create_db_engine(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text(DDL))
        order: list[str] = []

        async def orm_writer() -> None:
            async with engine.connect() as conn:
                conn = await conn.execution_options(**write_options)
                async with conn.begin():
                    await conn.execute(text("INSERT INTO t (who) VALUES ('orm')"))
                    order.append("orm in")
                    await asyncio.sleep(0.3)  # six busy timeouts
                    order.append("orm out")

        def insert_unit(db: object) -> None:
            order.append("unit")
            db.connection.driver_connection.execute(  # type: ignore[attr-defined]
                "INSERT INTO t (who) VALUES ('unit')"
            )

        writer = asyncio.ensure_future(orm_writer())
        while not order:
            await asyncio.sleep(0.001)
        await Units(engine).write("test", insert_unit)
        await writer
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT who FROM t ORDER BY id"))).scalars().all()
        assert engine.sync_engine in units_module._connections
    finally:
        await engine.dispose()
    assert order == ["orm in", "orm out", "unit"]
    assert rows == ["orm", "unit"]
    assert engine.sync_engine not in units_module._connections
