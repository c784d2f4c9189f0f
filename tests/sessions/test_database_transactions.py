"""What only a real database shows: rejected values roll back, artifact rows ride on the event."""

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import create_db_engine
from app.db.tables import StorageArtifactVersion
from app.errors import UnstorableValue
from app.sessions.base import NewArtifactVersion
from app.sessions.database import DatabaseSessionService
from app.sessions.models import Event, EventActions
from tests.conftest import fresh_pg_url
from tests.pgserver import PostgresServer


def _version(name: str, version: int) -> NewArtifactVersion:
    return NewArtifactVersion(
        name=name, version=version, mime_type="text/plain", size=1, sha256="a" * 64, blob_key="k"
    )


async def test_artifact_rows_commit_with_the_event_that_names_them(db_engine: AsyncEngine) -> None:
    service = DatabaseSessionService(db_engine)
    session = await service.create_session(app_name="app", user_id="u", session_id="s")
    event = Event(author="agent", actions=EventActions(artifact_delta={"a.txt": 0, "user:b": 0}))
    await service.append_event(
        session, event, artifact_versions=[_version("a.txt", 0), _version("user:b", 0)]
    )
    async with db_engine.connect() as connection:
        rows = (
            await connection.execute(
                select(
                    StorageArtifactVersion.name,
                    StorageArtifactVersion.session_id,
                    StorageArtifactVersion.event_seq,
                ).order_by(StorageArtifactVersion.name)
            )
        ).all()
    assert [tuple(r) for r in rows] == [("a.txt", "s", 1), ("user:b", "", 1)]
    # Deleting the session removes its own artifact rows, not the user's.
    await service.delete_session(app_name="app", user_id="u", session_id="s")
    async with db_engine.connect() as connection:
        names = (await connection.scalars(select(StorageArtifactVersion.name))).all()
    assert names == ["user:b"]


@pytest.fixture
async def pg_service(
    postgres: PostgresServer, pg_template: str
) -> AsyncIterator[DatabaseSessionService]:
    """A session service on a fresh PostgreSQL database."""
    engine = create_db_engine(fresh_pg_url(postgres, pg_template))
    yield DatabaseSessionService(engine)
    await engine.dispose()


async def test_state_value_postgres_rejects_rolls_back_the_whole_event(
    pg_service: DatabaseSessionService,
) -> None:
    session = await pg_service.create_session(app_name="app", user_id="u", state={"k": 0})
    await pg_service.append_event(
        session, Event(author="a", actions=EventActions(state_delta={"k": 1}))
    )
    # JSONB refuses NUL characters: the failure comes from the database, after the event insert.
    doomed = Event(author="a", actions=EventActions(state_delta={"k": 2, "user:x": "a\x00b"}))
    with pytest.raises(UnstorableValue):
        await pg_service.append_event(session, doomed)
    fresh = await pg_service.get_session(app_name="app", user_id="u", session_id=session.id)
    assert fresh is not None
    assert fresh.state == {"k": 1}
    assert [e.seq for e in fresh.events] == [1]
    assert session.last_seq == 1


async def test_history_cache_sees_other_replicas_and_recreated_sessions(
    db_engine: AsyncEngine,
) -> None:
    replica_a, replica_b = DatabaseSessionService(db_engine), DatabaseSessionService(db_engine)
    session = await replica_a.create_session(app_name="app", user_id="u", session_id="s")
    await replica_a.append_event(
        session, Event(author="a", actions=EventActions(state_delta={"n": 1}))
    )
    warm = await replica_a.get_session(app_name="app", user_id="u", session_id="s")
    assert warm is not None
    assert [e.seq for e in warm.events] == [1]
    # Another replica appends: the first one's cached prefix is extended from the database.
    other = await replica_b.get_session(app_name="app", user_id="u", session_id="s")
    assert other is not None
    await replica_b.append_event(other, Event(author="b"))
    seen = await replica_a.get_session(app_name="app", user_id="u", session_id="s")
    assert seen is not None
    assert [(e.seq, e.author) for e in seen.events] == [(1, "a"), (2, "b")]
    # Deleted and re-created under the same id: no trace of the old history.
    await replica_b.delete_session(app_name="app", user_id="u", session_id="s")
    await replica_b.create_session(app_name="app", user_id="u", session_id="s")
    fresh = await replica_a.get_session(app_name="app", user_id="u", session_id="s")
    assert fresh is not None
    assert fresh.events == []
