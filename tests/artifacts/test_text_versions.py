"""Text artifacts on every ArtifactService (in memory, SQLite with and without the fast path,
PostgreSQL): a version saved from a text Part reads back as a text Part, as ADK's do, and its
metadata has no mime type; inline data, even `text/plain`, stays inline data."""

from pathlib import Path
from typing import TypedDict

from google.genai import types

from app.agents import LlmAgent
from app.artifacts.base import TEXT_MIME_TYPE, ArtifactScope, BaseArtifactService
from app.artifacts.blobstore import LocalBlobStore
from app.artifacts.database import DatabaseArtifactService
from app.db.engine import create_db_engine
from app.db.migrate import downgrade, upgrade
from app.invocations.runner import Runner
from app.sessions.base import BaseSessionService
from app.sessions.database import DatabaseSessionService
from app.tools.tool_context import ToolContext
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response

APP = "capital_agent"
SCOPE = ArtifactScope(APP, "u1", "s")


class _Keys(TypedDict):
    app_name: str
    user_id: str
    session_id: str


KEYS = _Keys(app_name=APP, user_id="u1", session_id="s")
TEXT = "Zürich: 東京 🎉\n"

Services = tuple[BaseSessionService, BaseArtifactService]


async def test_a_text_part_reads_back_as_text_and_its_metadata_has_no_mime_type(
    services: Services,
) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    saved = await artifacts.save_part(SCOPE, filename="notes.txt", artifact=types.Part(text=TEXT))
    await artifacts.save_part(SCOPE, filename="notes.txt", artifact=types.Part(text=""))

    assert saved.mime_type is None
    assert saved.size == len(TEXT.encode())
    assert await artifacts.load_part(SCOPE, filename="notes.txt", version=0) == types.Part(
        text=TEXT
    )
    assert await artifacts.load_part(SCOPE, filename="notes.txt") == types.Part(text="")
    listed = await artifacts.list_version_metadata(SCOPE, filename="notes.txt")
    assert [(m.version, m.mime_type) for m in listed] == [(0, None), (1, None)]
    # The raw bytes are the UTF-8 text, downloaded as text/plain.
    content = await artifacts.get(SCOPE, filename="notes.txt", version=0)
    assert (content.metadata.mime_type, content.media_type) == (None, TEXT_MIME_TYPE)
    assert await artifacts.read_bytes(content.blob_key) == TEXT.encode()


async def test_inline_data_stays_inline_data_even_when_it_is_text_plain(
    services: Services,
) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    inline = types.Part(inline_data=types.Blob(data=b"hi", mime_type="text/plain"))
    saved = await artifacts.save_part(SCOPE, filename="a.txt", artifact=inline)
    # A Part with both: the bytes win, as `part_bytes` has always stored them.
    both = types.Part(text="ignored", inline_data=types.Blob(data=b"\x00", mime_type="image/png"))
    await artifacts.save_part(SCOPE, filename="b.png", artifact=both)

    assert saved.mime_type == "text/plain"
    assert await artifacts.load_part(SCOPE, filename="a.txt") == inline
    loaded = await artifacts.load_part(SCOPE, filename="b.png")
    assert loaded == types.Part(inline_data=types.Blob(data=b"\x00", mime_type="image/png"))
    assert (await artifacts.get(SCOPE, filename="b.png")).media_type == "image/png"


async def test_adk_keyword_methods_give_a_text_part_back(services: Services) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    as_bytes = {"inlineData": {"data": "aGk=", "mimeType": "text/plain"}}
    for artifact in (types.Part(text="a"), {"text": "b"}, as_bytes):
        await artifacts.save_artifact(**KEYS, filename="n.txt", artifact=artifact)

    loaded = [await artifacts.load_artifact(**KEYS, filename="n.txt", version=v) for v in range(3)]
    assert loaded == [
        types.Part(text="a"),
        types.Part(text="b"),
        types.Part(inline_data=types.Blob(data=b"hi", mime_type="text/plain")),
    ]
    first = await artifacts.get_artifact_version(**KEYS, filename="n.txt", version=0)
    assert first is not None
    assert first.mime_type is None
    listed = await artifacts.list_artifact_versions(**KEYS, filename="n.txt")
    assert [v.mime_type for v in listed] == [None, None, "text/plain"]


async def test_a_tool_loads_its_text_artifact_as_text_before_and_after_the_commit(
    services: Services,
) -> None:
    sessions, artifacts = services
    loaded: list[types.Part | None] = []

    async def write_note(tool_context: ToolContext) -> str:
        """Saves a note and reads it back while it is still staged."""
        await tool_context.save_artifact("note.txt", types.Part(text="remember"))
        loaded.append(await tool_context.load_artifact("note.txt"))
        return "saved"

    async def read_note(tool_context: ToolContext) -> str:
        """Reads the committed note."""
        loaded.append(await tool_context.load_artifact("note.txt"))
        return "read"

    agent = LlmAgent(
        name="agent",
        model=ScriptModel(
            replies=[
                calls_response(("write_note", {})),
                text_response("noted"),
                calls_response(("read_note", {})),
                text_response("done"),
            ]
        ),
        tools=[write_note, read_note],
    )
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, artifact_service=artifacts)
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    await run_turn(runner, "write", user_id="u1")
    await run_turn(runner, "read", user_id="u1")
    assert loaded == [types.Part(text="remember"), types.Part(text="remember")]
    assert (await artifacts.get(SCOPE, filename="note.txt")).metadata.mime_type is None


async def test_versions_saved_before_the_text_column_keep_reading_back_as_inline_data(
    db_url: str, tmp_path: Path
) -> None:
    # Migration c15a1text0001 adds the column as false for every existing row: their bytes
    # cannot tell a text Part from inline text/plain data, so they read back as they always did.
    blobs = LocalBlobStore(tmp_path / "blobs")
    engine = create_db_engine(db_url)
    sessions = DatabaseSessionService(engine)
    artifacts = DatabaseArtifactService(
        engine, blobs, max_artifact_bytes=1024, session_service=sessions
    )
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    await artifacts.save_part(SCOPE, filename="old.txt", artifact=types.Part(text="old"))
    await engine.dispose()

    downgrade(db_url, "a64ec219ead0")
    upgrade(db_url)

    engine = create_db_engine(db_url)
    artifacts = DatabaseArtifactService(engine, blobs, max_artifact_bytes=1024)
    try:
        assert await artifacts.load_part(SCOPE, filename="old.txt") == types.Part(
            inline_data=types.Blob(data=b"old", mime_type=TEXT_MIME_TYPE)
        )
    finally:
        await engine.dispose()
        await blobs.aclose()
