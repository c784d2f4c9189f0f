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
