"""Every ArtifactService (in memory, SQLite, PostgreSQL): versions, visibility; blob gc on the
database ones."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.genai import types

from app.artifacts.base import ArtifactScope, BaseArtifactService
from app.artifacts.blobstore import LocalBlobStore
from app.artifacts.blobstore.base import content_key
from app.artifacts.database import DatabaseArtifactService
from app.db.engine import create_db_engine
from app.errors import ArtifactNotFound, InvalidArtifactName, SessionConflict, SessionNotFound
from app.sessions.base import BaseSessionService
from app.sessions.database import DatabaseSessionService
from app.sessions.models import Event, EventActions
from tests.conftest import fresh_sqlite_url

PROJECT_ROOT = Path(__file__).resolve().parents[2]

APP = "capital_agent"


def _text(value: str) -> types.Part:
    return types.Part(text=value)


async def test_twenty_concurrent_saves_of_one_user_artifact_get_distinct_versions(
    services: tuple[BaseSessionService, BaseArtifactService],
) -> None:
    sessions, artifacts = services
    scopes = []
    for i in range(20):
        await sessions.create_session(app_name=APP, user_id="u1", session_id=f"s{i}")
        scopes.append(ArtifactScope(APP, "u1", f"s{i}"))

    async def save(scope: ArtifactScope, i: int) -> int:
        staged = await artifacts.stage_part(
            scope, filename="user:notes.txt", artifact=_text(str(i))
        )
        return (await artifacts.save(sessions, scope, staged)).version

    versions = await asyncio.gather(*(save(scope, i) for i, scope in enumerate(scopes)))
    assert sorted(versions) == list(range(20))
    # Every session sees the one user-scoped history, and each version holds what its save wrote.
    assert await artifacts.list_versions(scopes[7], filename="user:notes.txt") == list(range(20))
    for i, version in enumerate(versions):
        part = await artifacts.load_part(scopes[0], filename="user:notes.txt", version=version)
        assert part == _text(str(i))


async def test_session_artifacts_are_private_and_user_artifacts_are_shared(
    services: tuple[BaseSessionService, BaseArtifactService],
) -> None:
    sessions, artifacts = services
    for sid in ("a", "user"):  # a session literally named "user" must not see into user scope
        await sessions.create_session(app_name=APP, user_id="u1", session_id=sid)
    a, named_user = ArtifactScope(APP, "u1", "a"), ArtifactScope(APP, "u1", "user")
    for scope, name in [(a, "report.txt"), (a, "user:cv.txt"), (named_user, "report.txt")]:
        staged = await artifacts.stage_part(scope, filename=name, artifact=_text(name))
        await artifacts.save(sessions, scope, staged)
    assert await artifacts.list_names(a) == ["report.txt", "user:cv.txt"]
    assert await artifacts.list_names(named_user) == ["report.txt", "user:cv.txt"]
    assert await artifacts.list_versions(named_user, filename="report.txt") == [0]
    await sessions.delete_session(app_name=APP, user_id="u1", session_id="a")
    assert await artifacts.list_names(named_user) == ["report.txt", "user:cv.txt"]
    with pytest.raises(SessionNotFound):
        await artifacts.list_names(a)


async def test_save_records_a_user_event_with_the_artifact_delta(
    services: tuple[BaseSessionService, BaseArtifactService],
) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    scope = ArtifactScope(APP, "u1", "s")
    for _ in range(2):
        staged = await artifacts.stage_part(scope, filename="docs/a.txt", artifact=_text("x"))
        await artifacts.save(sessions, scope, staged)
    session = await sessions.get_session(app_name=APP, user_id="u1", session_id="s")
    assert session is not None
    assert [e.actions.artifact_delta for e in session.events] == [
        {"docs/a.txt": 0},
        {"docs/a.txt": 1},
    ]
    assert all(e.author == "user" for e in session.events)


async def test_version_whose_event_fails_is_never_visible_and_gc_removes_its_blob(
    db_services: tuple[DatabaseSessionService, DatabaseArtifactService],
) -> None:
    sessions, artifacts = db_services
    session = await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    scope = ArtifactScope(APP, "u1", "s")
    kept = await artifacts.save(
        sessions, scope, await artifacts.stage_part(scope, filename="kept.txt", artifact=_text("k"))
    )
    # A second copy of the kept bytes under another name, whose event fails: same blob.
    same_bytes = await artifacts.stage_part(scope, filename="dup.txt", artifact=_text("k"))
    orphan = await artifacts.stage_part(scope, filename="lost.txt", artifact=_text("orphan"))
    stale = session  # last_seq 0, but the save above appended seq 1
    for staged in (same_bytes, orphan):
        event = Event(
            author="agent", actions=EventActions(artifact_delta={staged.name: staged.version})
        )
        with pytest.raises(SessionConflict):
            await sessions.append_event(stale, event, artifact_versions=[staged])
    with pytest.raises(ArtifactNotFound):
        await artifacts.get(scope, filename="lost.txt")
    assert await artifacts.list_names(scope) == ["kept.txt"]
    assert await artifacts.blob_store.exists(orphan.blob_key)

    # Within the grace period nothing is collected (a save may be in flight).
    assert await artifacts.collect_garbage(grace_seconds=3600) == []
    removed = await artifacts.collect_garbage(grace_seconds=0)
    assert removed == [orphan.blob_key]
    assert not await artifacts.blob_store.exists(orphan.blob_key)
    assert same_bytes.blob_key == (await artifacts.get(scope, filename="kept.txt")).blob_key
    assert await artifacts.read_bytes(same_bytes.blob_key) == b"k"
    assert kept.version == 0


async def test_deleted_artifact_never_reuses_a_version_number(
    services: tuple[BaseSessionService, BaseArtifactService],
) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    scope = ArtifactScope(APP, "u1", "s")
    for _ in range(2):
        await artifacts.save(
            sessions, scope, await artifacts.stage_part(scope, filename="a", artifact=_text("1"))
        )
    await artifacts.delete(scope, filename="a")
    with pytest.raises(ArtifactNotFound):
        await artifacts.delete(scope, filename="a")
    again = await artifacts.save(
        sessions, scope, await artifacts.stage_part(scope, filename="a", artifact=_text("2"))
    )
    assert again.version == 2


@pytest.mark.parametrize(
    "name",
    ["../x", "a/../b", "/etc/passwd", "a//b", "a\x00b", "a\nb", "x" * 513, "", "a/versions", "."],
)
async def test_unsafe_names_are_rejected(
    services: tuple[BaseSessionService, BaseArtifactService], name: str
) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    with pytest.raises(InvalidArtifactName):
        await artifacts.stage_part(
            ArtifactScope(APP, "u1", "s"), filename=name, artifact=_text("x")
        )


async def test_agentd_gc_command_removes_only_unreferenced_blobs(
    sqlite_template: Path, tmp_path: Path
) -> None:
    url = fresh_sqlite_url(sqlite_template, tmp_path)
    engine = create_db_engine(url)
    blobs = LocalBlobStore(tmp_path / "blobs")
    sessions = DatabaseSessionService(engine)
    artifacts = DatabaseArtifactService(engine, blobs, max_artifact_bytes=1024)
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    scope = ArtifactScope(APP, "u1", "s")
    kept = await artifacts.save(
        sessions, scope, await artifacts.stage_part(scope, filename="a", artifact=_text("kept"))
    )
    orphan = await artifacts.stage_part(scope, filename="b", artifact=_text("never committed"))
    await engine.dispose()

    env = {
        **os.environ,
        "AGENTD_DATABASE_URL": url,
        "AGENTD_BLOB_DIR": str(tmp_path / "blobs"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "app", "gc", "--grace-seconds", "0"],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "gc removed 1 unreferenced blob(s)" in result.stderr
    assert not await blobs.exists(orphan.blob_key)
    assert await blobs.exists(content_key(kept.sha256))
