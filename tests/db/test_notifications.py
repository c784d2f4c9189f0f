"""The PostgreSQL listener: it hears `release_lease`'s notification from another engine, only
once the releasing unit commits, and recovers when its connection is killed."""

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import create_db_engine
from app.db.notifications import PostgresListener
from app.db.repositories.invocations import (
    SESSION_FREE_CHANNEL,
    InvocationRepository,
    parse_session_free,
)
from app.db.uow import Db, UnitOfWork
from tests.conftest import engine_for
from tests.pgserver import PostgresServer

pytestmark = pytest.mark.postgres


class Rollback(Exception):
    """Raised inside a unit to roll it back."""


async def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.fixture
async def sender(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """An engine on a fresh PostgreSQL database (the releasing replica's)."""
    db_engine = engine_for(request, "postgres", tmp_path)
    yield db_engine
    await db_engine.dispose()


async def test_a_release_is_heard_on_commit_and_again_after_the_connection_is_killed(
    sender: AsyncEngine, postgres: PostgresServer
) -> None:
    listening = create_db_engine(sender.url.render_as_string(hide_password=False), pool_size=1)
    heard: list[tuple[int, str]] = []
    connects: list[int] = []
    listener = PostgresListener(
        listening,
        SESSION_FREE_CHANNEL,
        on_notify=lambda payload: heard.append(parse_session_free(payload)),
        on_connect=lambda: connects.append(len(heard)),
    )
    uow = UnitOfWork(sender)

    def release(db: Db) -> None:
        InvocationRepository(db).release_lease(7, "no-such-invocation")

    def release_then_fail(db: Db) -> None:
        release(db)
        raise Rollback

    await listener.start()
    try:
        assert connects == [0]
        with pytest.raises(Rollback):
            await uow.write("release", release_then_fail)
        await uow.write("release", release)
        await _until(lambda: listener.received == 1)
        # No owner: the invocation is unknown. The rolled-back unit sent nothing.
        assert heard == [(7, "")]

        postgres.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE application_name = 'agentd listen {SESSION_FREE_CHANNEL}' "
            f"AND datname = '{sender.url.database}'"
        )
        await _until(lambda: len(connects) == 2)
        await uow.write("release", release)
        await _until(lambda: listener.received == 2)
        assert heard == [(7, ""), (7, "")]
    finally:
        await listener.stop()
        await listening.dispose()
