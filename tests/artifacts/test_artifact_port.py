"""The ArtifactService port on every implementation: commit visibility, one-call saves, ADK's
keyword-only methods, and the in-memory service behind `InMemoryRunner`."""

from collections.abc import AsyncIterator
from typing import TypedDict

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.artifacts.base import ArtifactScope, BaseArtifactService
from app.errors import ArtifactNotFound, InvalidRequest, SessionConflict, SessionNotFound
from app.invocations.runner import InMemoryRunner
from app.sessions.base import BaseSessionService
from app.sessions.models import Event, EventActions
from app.tools.tool_context import ToolContext
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response

APP = "capital_agent"
SCOPE = ArtifactScope(APP, "u1", "s")

Services = tuple[BaseSessionService, BaseArtifactService]


class _Keys(TypedDict):
    app_name: str
    user_id: str
    session_id: str


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_staged_version_becomes_visible_only_when_an_event_naming_it_commits(
    services: Services,
) -> None:
    sessions, artifacts = services
    session = await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    committed = await artifacts.stage_part(SCOPE, filename="a.txt", artifact=types.Part(text="1"))
    lost = await artifacts.stage_part(SCOPE, filename="b.txt", artifact=types.Part(text="2"))
    with pytest.raises(ArtifactNotFound):
        await artifacts.get(SCOPE, filename="a.txt")

    stale = session.model_copy(deep=True)
    event = Event(author="agent", actions=EventActions(artifact_delta={"a.txt": 0}))
    await sessions.append_event(session, event, artifact_versions=[committed])
    failing = Event(author="agent", actions=EventActions(artifact_delta={"b.txt": 0}))
    with pytest.raises(SessionConflict):
        await sessions.append_event(stale, failing, artifact_versions=[lost])

    content = await artifacts.get(SCOPE, filename="a.txt")
    assert (content.metadata.version, content.blob_key) == (0, committed.blob_key)
    assert b"".join([chunk async for chunk in await content.open(start=0)]) == b"1"
    assert await artifacts.list_names(SCOPE) == ["a.txt"]


async def test_save_part_and_save_stream_record_one_user_event_each(services: Services) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    first = await artifacts.save_part(
        SCOPE, filename="doc", artifact=types.Part(text="one"), custom_metadata={"n": 1}
    )
    second = await artifacts.save_stream(
        SCOPE, filename="doc", chunks=_chunks(b"tw", b"o"), mime_type="text/plain"
    )
    assert (first.version, first.custom_metadata) == (0, {"n": 1})
    assert (second.version, second.size) == (1, 3)
    session = await sessions.get_session(app_name=APP, user_id="u1", session_id="s")
    assert session is not None
    assert [e.actions.artifact_delta for e in session.events] == [{"doc": 0}, {"doc": 1}]
    part = await artifacts.load_part(SCOPE, filename="doc")
    assert part.inline_data is not None
    assert (part.inline_data.data, part.inline_data.mime_type) == (b"two", "text/plain")
    with pytest.raises(SessionNotFound):
        await artifacts.save_stream(
            ArtifactScope(APP, "u1", "gone"), filename="doc", chunks=_chunks(b"x")
        )


async def test_adk_keyword_methods_reach_the_same_versions(services: Services) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    keys = _Keys(app_name=APP, user_id="u1", session_id="s")
    assert await artifacts.load_artifact(**keys, filename="notes.txt") is None
    assert await artifacts.get_artifact_version(**keys, filename="notes.txt") is None
    assert await artifacts.list_versions(**keys, filename="notes.txt") == []
    assert await artifacts.list_artifact_versions(**keys, filename="notes.txt") == []

    as_dict = {"inlineData": {"data": "aGk=", "mimeType": "text/plain"}}
    assert await artifacts.save_artifact(**keys, filename="notes.txt", artifact=as_dict) == 0
    version = await artifacts.save_artifact(
        **keys, filename="notes.txt", artifact=types.Part(text="bye"), custom_metadata={"k": "v"}
    )
    assert version == 1
    assert await artifacts.list_artifact_keys(**keys) == ["notes.txt"]
    assert await artifacts.list_versions(**keys, filename="notes.txt") == [0, 1]
    assert await artifacts.list_versions(SCOPE, filename="notes.txt") == [0, 1]
    first = await artifacts.load_artifact(**keys, filename="notes.txt", version=0)
    assert first is not None
    assert first.inline_data is not None
    assert first.inline_data.data == b"hi"
    latest = await artifacts.get_artifact_version(**keys, filename="notes.txt")
    assert latest is not None
    assert (latest.version, latest.custom_metadata) == (1, {"k": "v"})
    listed = await artifacts.list_artifact_versions(**keys, filename="notes.txt")
    assert [v.version for v in listed] == [0, 1]

    await artifacts.delete_artifact(**keys, filename="notes.txt")
    await artifacts.delete_artifact(**keys, filename="notes.txt")  # already gone: no error
    assert await artifacts.list_artifact_keys(**keys) == []
    with pytest.raises(InvalidRequest):
        await artifacts.list_artifact_keys(app_name=APP, user_id="u1")


async def test_recreated_session_starts_without_the_old_sessions_artifacts(
    services: Services,
) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    for name in ("report.txt", "report.txt", "user:cv.txt"):
        await artifacts.save_part(SCOPE, filename=name, artifact=types.Part(text=name))
    await sessions.delete_session(app_name=APP, user_id="u1", session_id="s")
    with pytest.raises(SessionNotFound):
        await artifacts.list_names(SCOPE)

    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    assert await artifacts.list_names(SCOPE) == ["user:cv.txt"]
    again = await artifacts.save_part(SCOPE, filename="report.txt", artifact=types.Part(text="x"))
    assert again.version == 0


async def test_in_memory_runner_commits_tool_artifacts_for_later_turns() -> None:
    loaded: list[types.Part | None] = []

    async def write_note(tool_context: ToolContext) -> str:
        """Saves a note."""
        await tool_context.save_artifact("user:note.txt", types.Part(text="remember"))
        return "saved"

    async def read_note(tool_context: ToolContext) -> str:
        """Reads the note back."""
        part = await tool_context.load_artifact("user:note.txt")
        loaded.append(part)
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
    runner = InMemoryRunner(agent, app_name=APP)
    assert runner.artifact_service is not None
    for session_id in ("s1", "s2"):
        await runner.session_service.create_session(
            app_name=APP, user_id="u", session_id=session_id
        )
    await run_turn(runner, "write", session_id="s1")
    await run_turn(runner, "read", session_id="s2")
    assert loaded == [types.Part(text="remember")]
    other = ArtifactScope(APP, "u", "s2")
    assert await runner.artifact_service.list_versions(other, filename="user:note.txt") == [0]


async def test_user_artifacts_outlive_the_session_that_saved_them(services: Services) -> None:
    sessions, artifacts = services
    for sid in ("s", "other"):
        await sessions.create_session(app_name=APP, user_id="u1", session_id=sid)
    session = await sessions.get_session(app_name=APP, user_id="u1", session_id="s")
    assert session is not None
    staged = await artifacts.stage_part(
        SCOPE, filename="user:cv.txt", artifact=types.Part(text="x")
    )
    event = Event(author="agent", actions=EventActions(artifact_delta={"user:cv.txt": 0}))
    await sessions.append_event(session, event, artifact_versions=[staged])
    await sessions.delete_session(app_name=APP, user_id="u1", session_id="s")

    other = ArtifactScope(APP, "u1", "other")
    assert await artifacts.list_names(other) == ["user:cv.txt"]
    assert (await artifacts.get(other, filename="user:cv.txt")).metadata.version == 0


async def test_a_session_created_again_starts_its_artifacts_from_version_zero(
    services: Services,
) -> None:
    sessions, artifacts = services
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")
    await artifacts.save_part(SCOPE, filename="a.txt", artifact=types.Part(text="1"))
    await artifacts.stage_part(SCOPE, filename="a.txt", artifact=types.Part(text="never"))
    await sessions.delete_session(app_name=APP, user_id="u1", session_id="s")
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s")

    assert await artifacts.list_names(SCOPE) == []
    again = await artifacts.save_part(SCOPE, filename="a.txt", artifact=types.Part(text="2"))
    assert again.version == 0
