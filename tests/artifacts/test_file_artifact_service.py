"""FileArtifactService's own promises, beyond the port's contract (which it passes in
test_artifact_port.py and its neighbours): ADK's folder layout with a metadata file per version,
no path that leaves the root, atomic writes, deleted versions' files removed, and a Runner that
binds its session service to an unbound instance."""

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.artifacts import FileArtifactService as ExportedFileArtifactService
from app.artifacts.base import ArtifactScope
from app.artifacts.file import METADATA_FILE, FileArtifactService
from app.artifacts.file_artifact_service import FileArtifactService as AdkPathFileArtifactService
from app.errors import ArtifactTooLarge, InvalidArtifactName, InvalidRequest
from app.invocations.runner import Runner
from app.sessions.in_memory import InMemorySessionService
from app.tools.tool_context import ToolContext
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response

APP = "files_app"
SCOPE = ArtifactScope(APP, "u1", "s1")


@pytest.fixture
async def service(tmp_path: Path) -> FileArtifactService:
    """A FileArtifactService on the in-memory session store, with session s1."""
    sessions = InMemorySessionService()
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s1")
    return FileArtifactService(tmp_path / "root", session_service=sessions, max_artifact_bytes=64)


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


async def _chunks(*parts: bytes, fail: bool = False) -> AsyncIterator[bytes]:
    for part in parts:
        yield part
    if fail:
        raise ConnectionError("client went away")


def test_the_service_is_exported_at_adks_paths() -> None:
    assert ExportedFileArtifactService is FileArtifactService
    assert AdkPathFileArtifactService is FileArtifactService


async def test_versions_are_files_in_adks_layout_with_their_metadata(
    service: FileArtifactService,
) -> None:
    part = types.Part(inline_data=types.Blob(data=b"%PDF", mime_type="application/pdf"))
    await service.save_part(SCOPE, filename="reports/q1.pdf", artifact=part)
    await service.save_part(
        SCOPE, filename="user:cv.txt", artifact=types.Part(text="cv"), custom_metadata={"k": 1}
    )
    await service.save_part(SCOPE, filename="user:cv.txt", artifact=types.Part(text="cv 2"))

    base = "apps/files_app/users/u1"
    session_dir = f"{base}/sessions/s1/artifacts/reports/q1.pdf/versions/0"
    user_dir = f"{base}/artifacts/cv.txt/versions"
    assert _files(service.root_dir) == [
        f"{user_dir}/0/cv.txt",
        f"{user_dir}/0/{METADATA_FILE}",
        f"{user_dir}/1/cv.txt",
        f"{user_dir}/1/{METADATA_FILE}",
        f"{session_dir}/{METADATA_FILE}",
        f"{session_dir}/q1.pdf",
    ]
    assert (service.root_dir / session_dir / "q1.pdf").read_bytes() == b"%PDF"
    pdf = json.loads((service.root_dir / session_dir / METADATA_FILE).read_text())
    assert (pdf["fileName"], pdf["version"], pdf["mimeType"]) == (
        "reports/q1.pdf",
        0,
        "application/pdf",
    )
    cv = json.loads((service.root_dir / user_dir / "0" / METADATA_FILE).read_text())
    assert (cv["fileName"], cv["mimeType"], cv["customMetadata"]) == ("user:cv.txt", None, {"k": 1})
    assert cv["size"] == 2
    assert (await service.load_part(SCOPE, filename="user:cv.txt")).text == "cv 2"


async def test_a_range_of_a_version_streams_from_its_file(service: FileArtifactService) -> None:
    await service.save_stream(SCOPE, filename="data.bin", chunks=_chunks(b"0123", b"456789"))
    content = await service.get(SCOPE, filename="data.bin")
    assert content.service is service
    assert b"".join([c async for c in await content.open(start=2, end=5)]) == b"2345"
    assert b"".join([c async for c in await content.open(start=8)]) == b"89"


@pytest.mark.parametrize(
    ("scope", "filename", "error"),
    [
        (SCOPE, "../../../../escape.txt", InvalidArtifactName),
        (SCOPE, "user:../escape.txt", InvalidArtifactName),
        (SCOPE, "/etc/passwd", InvalidArtifactName),
        (ArtifactScope(APP, "../u2", "s1"), "a.txt", InvalidRequest),
        (ArtifactScope(APP, "u1", "s1/../../u2"), "a.txt", InvalidRequest),
        (ArtifactScope("..", "u1", "s1"), "a.txt", InvalidRequest),
    ],
)
async def test_a_path_that_would_leave_the_root_is_refused(
    service: FileArtifactService, scope: ArtifactScope, filename: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        await service.stage_part(scope, filename=filename, artifact=types.Part(text="x"))
    with pytest.raises(error):
        await service.list_versions(scope, filename=filename)
    assert _files(service.root_dir.parent) == []


async def test_a_symlink_out_of_the_root_is_not_followed(
    service: FileArtifactService, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    artifacts = service.root_dir / "apps" / APP / "users" / "u1" / "sessions" / "s1" / "artifacts"
    artifacts.mkdir(parents=True)
    (artifacts / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidArtifactName):
        await service.stage_part(SCOPE, filename="link/x.txt", artifact=types.Part(text="x"))
    assert list(outside.iterdir()) == []


async def test_a_failed_or_oversized_upload_leaves_no_file(service: FileArtifactService) -> None:
    with pytest.raises(ConnectionError):
        await service.save_stream(SCOPE, filename="a.bin", chunks=_chunks(b"part", fail=True))
    with pytest.raises(ArtifactTooLarge):
        await service.save_stream(SCOPE, filename="a.bin", chunks=_chunks(b"x" * 40, b"y" * 40))
    with pytest.raises(ArtifactTooLarge):
        await service.save_part(SCOPE, filename="a.bin", artifact=types.Part(text="z" * 65))
    assert _files(service.root_dir) == []
    assert await service.list_names(SCOPE) == []


async def test_deleting_an_artifact_removes_its_versions_files(
    service: FileArtifactService,
) -> None:
    for text in ("one", "two"):
        await service.save_part(SCOPE, filename="notes.txt", artifact=types.Part(text=text))
    await service.save_part(SCOPE, filename="keep.txt", artifact=types.Part(text="kept"))
    await service.delete(SCOPE, filename="notes.txt")
    assert [Path(f).name for f in _files(service.root_dir)] == ["keep.txt", METADATA_FILE]
    again = await service.save_part(SCOPE, filename="notes.txt", artifact=types.Part(text="3"))
    assert again.version == 2


async def test_a_runner_binds_its_session_service_to_an_unbound_file_service(
    tmp_path: Path,
) -> None:
    async def write_note(tool_context: ToolContext) -> str:
        """Saves a note."""
        await tool_context.save_artifact("note.txt", types.Part(text="remember"))
        return "saved"

    unbound = FileArtifactService(tmp_path / "root")
    with pytest.raises(ValueError, match="session service"):
        await unbound.list_names(SCOPE)

    sessions = InMemorySessionService()
    agent = LlmAgent(
        name="agent",
        model=ScriptModel(replies=[calls_response(("write_note", {})), text_response("ok")]),
        tools=[write_note],
    )
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, artifact_service=unbound)
    await sessions.create_session(app_name=APP, user_id="u1", session_id="s1")
    await run_turn(runner, "write", session_id="s1", user_id="u1")

    assert unbound.session_service is sessions
    assert (await unbound.load_part(SCOPE, filename="note.txt")).text == "remember"
    note = unbound.root_dir / "apps" / APP / "users/u1/sessions/s1/artifacts/note.txt"
    assert (note / "versions/0/note.txt").read_text() == "remember"


async def test_ping_writes_under_the_root(service: FileArtifactService) -> None:
    await service.ping()
    assert not any(name.startswith(".tmp-") for name in os.listdir(service.root_dir))
