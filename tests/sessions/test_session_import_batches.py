"""Imports larger than one unit of work (issue 26): written in batches as a staged session that
becomes visible whole, or not at all, on every backend."""

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.repositories.sessions import (
    STAGED_USER_PREFIX,
    STALE_STAGED_SECONDS,
    SessionRepository,
)
from app.db.tables import StorageEvent, StorageSession
from app.db.uow import Db, UnitOfWork
from app.errors import DuplicateKey, SessionAlreadyExists
from app.sessions.base import BaseSessionService
from app.sessions.database import IMPORT_BATCH_EVENTS, DatabaseSessionService
from app.sessions.models import Event, EventActions
from app.sessions.storage import prepare_event

APP = "app"
#: More events than two batches hold, and not a multiple of a batch.
COUNT = 2 * IMPORT_BATCH_EVENTS + 37


def _events(count: int = COUNT) -> list[Event]:
    return [
        Event(
            id=f"e{index}",
            author="user" if index % 2 == 0 else "agent",
            invocation_id=f"i{index // 2}",
            actions=EventActions(
                state_delta={"last": index, f"k{index % 7}": index, "user:seen": index}
            ),
        )
        for index in range(count)
    ]


async def _rows(db_engine: AsyncEngine) -> tuple[list[tuple[Any, ...]], int]:
    async with db_engine.connect() as connection:
        sessions = (
            await connection.execute(select(StorageSession.user_id, StorageSession.id))
        ).all()
        events = (await connection.execute(select(func.count()).select_from(StorageEvent))).scalar()
    return [tuple(row) for row in sessions], int(events or 0)


async def test_an_import_of_many_batches_is_stored_whole_in_order_with_its_state(
    session_service: BaseSessionService,
) -> None:
    sent = _events()
    expected = [prepare_event(event.model_copy(deep=True))[0] for event in sent]
    imported = await session_service.import_session(
        app_name=APP, user_id="u1", session_id="big", state={"start": 1}, events=sent
    )
    assert imported.last_seq == COUNT
    loaded = await session_service.get_session(app_name=APP, user_id="u1", session_id="big")
    assert loaded is not None
    assert [event.seq for event in loaded.events] == list(range(1, COUNT + 1))
    stored = [
        event.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"seq"})
        for event in loaded.events
    ]
    assert stored == expected
    last = COUNT - 1
    assert loaded.state["start"] == 1
    assert loaded.state["last"] == last
    assert loaded.state["user:seen"] == last
    assert loaded.state[f"k{last % 7}"] == last
    listed = await session_service.list_sessions(app_name=APP, user_id="u1")
    assert [session.id for session in listed.sessions] == ["big"]
    other = await session_service.create_session(app_name=APP, user_id="u1", session_id="next")
    assert other.state["user:seen"] == last


async def test_an_import_of_many_batches_under_a_taken_id_writes_nothing(
    db_engine: AsyncEngine,
) -> None:
    service = DatabaseSessionService(db_engine)
    await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    with pytest.raises(SessionAlreadyExists):
        await service.import_session(app_name=APP, user_id="u1", session_id="s1", events=_events())
    assert await _rows(db_engine) == ([("u1", "s1")], 0)


async def test_an_import_failing_after_its_first_batches_leaves_no_staged_rows(
    db_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def taken_meanwhile(*_args: object, **_kwargs: object) -> None:
        # What the publishing UPDATE raises when another writer took the id meanwhile.
        raise DuplicateKey("taken")

    monkeypatch.setattr(SessionRepository, "publish_staged", taken_meanwhile)
    service = DatabaseSessionService(db_engine)
    with pytest.raises(SessionAlreadyExists):
        await service.import_session(app_name=APP, user_id="u1", session_id="s1", events=_events())
    assert await _rows(db_engine) == ([], 0)
    listed = await service.list_sessions(app_name=APP, user_id="u1")
    assert listed.sessions == []


async def test_a_staged_session_abandoned_long_ago_is_deleted_by_the_next_large_import(
    db_engine: AsyncEngine,
) -> None:
    service = DatabaseSessionService(db_engine)
    long_ago = 1_000.0

    def abandon(db: Db) -> None:
        # What a process that died midway through an import leaves.
        repository = SessionRepository(db)
        row = {"app_name": APP, "id": "lost", "state": {}, "last_seq": 0}
        pk = repository.insert_staged({**row, "create_time": long_ago, "update_time": long_ago})
        repository.insert_events(
            [
                {
                    "session_pk": pk,
                    "seq": 1,
                    "id": "e",
                    "invocation_id": "i",
                    "author": "user",
                    "timestamp": long_ago,
                    "event": {"id": "e"},
                }
            ]
        )
        recent = repository.insert_staged(
            {**row, "id": "running", "create_time": 9e9, "update_time": 9e9}
        )
        assert recent != pk

    await UnitOfWork(db_engine).write("test", abandon)
    sessions, events = await _rows(db_engine)
    assert [user.startswith(STAGED_USER_PREFIX) for user, _ in sessions] == [True, True]
    assert events == 1
    assert long_ago < 9e9 - STALE_STAGED_SECONDS

    await service.import_session(app_name=APP, user_id="u1", session_id="new", events=_events())
    sessions, events = await _rows(db_engine)
    # The abandoned one is gone; one staged this recently may still be running elsewhere.
    assert sorted(session_id for _, session_id in sessions) == ["new", "running"]
    assert events == COUNT
