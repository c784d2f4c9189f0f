"""FileArtifactService: artifact versions as files under a root folder, in ADK's layout.

    root/apps/{app}/users/{user}/sessions/{session}/artifacts/{name}/versions/{v}/{basename}
    root/apps/{app}/users/{user}/artifacts/{name without 'user:'}/versions/{v}/{basename}

Each version folder holds the bytes and a `metadata.json` (file name, mime type, custom metadata,
size, sha256, create time), so the tree reads without agentd. Nested names make nested folders;
a name, app, user or session id that would leave the root is refused (InvalidArtifactName,
InvalidRequest), and every path is checked again after resolving symlinks. Files are written to a
temp file in the version folder and renamed into place with `os.replace`, so a reader never sees a
partial file.

Which versions exist is decided as for every agentd artifact service: the version number is
allocated when staging, and the version becomes visible exactly when the event naming it commits,
through the session service's store (the in-memory one's rows, or the database's artifact tables
for a `DatabaseSessionService`). So staged-but-failed versions never show, session artifacts go
with their session, and a session created again starts from version 0 (its files are rewritten).
Deleting an artifact removes its committed versions' folders.
"""

import errno
import functools
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, ParamSpec, TypeVar

import anyio
import anyio.to_thread
from google.genai import types

from app.artifacts.base import (
    DEFAULT_MIME_TYPE,
    ArtifactContent,
    ArtifactScope,
    BaseArtifactService,
    VersionRecord,
    is_text_part,
    part_bytes,
    wire_mime_type,
)
from app.artifacts.blob_backed import BlobBackedArtifactService, storage_problem
from app.artifacts.blobstore import InMemoryBlobStore
from app.artifacts.blobstore.base import DEFAULT_CHUNK_SIZE, check_range, os_failure, range_stop
from app.artifacts.database import DatabaseArtifactService
from app.artifacts.in_memory import DEFAULT_MAX_ARTIFACT_BYTES, InMemoryArtifactService
from app.artifacts.models import (
    USER_PREFIX,
    ArtifactVersion,
    check_version_values,
    is_user_scoped,
    validate_artifact_name,
)
from app.errors import (
    ArtifactStorageUnavailable,
    ArtifactTooLarge,
    BlobNotFound,
    InvalidArtifactName,
    InvalidRequest,
)
from app.sessions.base import BaseSessionService
from app.sessions.database import DatabaseSessionService
from app.sessions.in_memory import InMemorySessionService

logger = logging.getLogger("agentd.artifacts")

METADATA_FILE = "metadata.json"
_TMP_PREFIX = ".tmp-"

_P = ParamSpec("_P")
_T = TypeVar("_T")


class FileArtifactService(BaseArtifactService):
    """Artifact versions as files under `root_dir`; versions commit with their events.

    Args:
        root_dir: the folder that holds every app's artifacts (created if missing).
        session_service: the session service whose events commit the versions: an
            `InMemorySessionService` or a `DatabaseSessionService`. A Runner given this service
            without one binds its own session service.
        max_artifact_bytes: the largest version stored.
    """

    def __init__(
        self,
        root_dir: Path | str,
        *,
        session_service: BaseSessionService | None = None,
        max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES,
    ) -> None:
        super().__init__(session_service=session_service)
        self.root_dir = Path(root_dir).expanduser().resolve()
        self.root_dir.mkdir(parents=True, exist_ok=True)
        self.max_artifact_bytes = max_artifact_bytes
        self._index_service: BlobBackedArtifactService | None = None

    # -- layout ---------------------------------------------------------------------------

    def version_dir(self, scope: ArtifactScope, filename: str, version: int) -> Path:
        """The folder of one version (InvalidArtifactName/InvalidRequest if it leaves the root)."""
        validate_artifact_name(filename)
        parts = ["apps", _segment(scope.app_name, "app_name")]
        parts += ["users", _segment(scope.user_id, "user_id")]
        if not is_user_scoped(filename):
            parts += ["sessions", _segment(scope.session_id, "session_id")]
        parts += ["artifacts", *filename.removeprefix(USER_PREFIX).split("/")]
        parts += ["versions", str(version)]
        folder = self.root_dir.joinpath(*parts)
        self._inside_root(folder, filename)
        return folder

    def _inside_root(self, path: Path, what: str) -> Path:
        resolved = path.resolve()
        if not resolved.is_relative_to(self.root_dir):
            raise InvalidArtifactName(f"Artifact {what!r} would be stored outside the root folder.")
        return resolved

    def _blob_path(self, blob_key: str) -> Path:
        path = self.root_dir / blob_key
        if Path(blob_key).is_absolute() or not path.resolve().is_relative_to(self.root_dir):
            raise InvalidRequest("An artifact version names a file outside the root folder.")
        return path

    # -- the versions' index ----------------------------------------------------------------

    @property
    def _index(self) -> BlobBackedArtifactService:
        """The service whose rows say which versions exist (bytes are never kept in it)."""
        if self._index_service is None:
            sessions = self.session_service
            unused = InMemoryBlobStore()
            if isinstance(sessions, InMemorySessionService):
                self._index_service = InMemoryArtifactService(
                    session_service=sessions, blob_store=unused
                )
            elif isinstance(sessions, DatabaseSessionService):
                self._index_service = DatabaseArtifactService(
                    sessions.db_engine,
                    unused,
                    max_artifact_bytes=self.max_artifact_bytes,
                    session_service=sessions,
                )
            else:
                raise ValueError(
                    "FileArtifactService needs the session service whose events commit its "
                    "versions (an InMemorySessionService or a DatabaseSessionService): pass "
                    "session_service=, or give it to a Runner together with one."
                )
        return self._index_service

    def bind_session_service(self, session_service: BaseSessionService) -> None:
        """Use `session_service` to commit versions, unless one was given already."""
        if self.session_service is None:
            self.session_service = session_service

    # -- writes ---------------------------------------------------------------------------

    async def stage(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        chunks: AsyncIterable[bytes],
        mime_type: str = DEFAULT_MIME_TYPE,
        custom_metadata: dict[str, Any] | None = None,
    ) -> VersionRecord:
        """Write a streamed body as the next version's file; visible once its event commits."""
        return await self._stage(scope, filename, chunks, mime_type, custom_metadata, is_text=False)

    async def _stage(
        self,
        scope: ArtifactScope,
        filename: str,
        chunks: AsyncIterable[bytes],
        mime_type: str,
        custom_metadata: dict[str, Any] | None,
        *,
        is_text: bool,
    ) -> VersionRecord:
        self.version_dir(scope, filename, 0)  # a bad name fails before the session is checked
        check_version_values(mime_type, custom_metadata)
        await self._index._require_session(scope)
        version = await self._index._allocate_version(scope, filename)
        folder = self.version_dir(scope, filename, version)
        target = folder / folder.parent.parent.name
        writer = _VersionWriter(target, self.max_artifact_bytes)
        try:
            await _write_file(writer.open, target)
            async for chunk in chunks:
                await _write_file(functools.partial(writer.write, chunk), target)
            await _write_file(writer.finish, target)
        finally:
            await _run(writer.discard)
        return await self._record(
            scope, filename, version, writer, mime_type, custom_metadata, is_text=is_text
        )

    async def stage_part(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        artifact: types.Part,
        custom_metadata: dict[str, Any] | None = None,
    ) -> VersionRecord:
        """`stage` for a google-genai Part (inline data or text)."""
        data, mime_type = part_bytes(artifact)
        if len(data) > self.max_artifact_bytes:
            raise ArtifactTooLarge(f"Artifacts are limited to {self.max_artifact_bytes} bytes.")

        async def single() -> AsyncIterator[bytes]:
            yield data

        return await self._stage(
            scope, filename, single(), mime_type, custom_metadata, is_text=is_text_part(artifact)
        )

    async def _record(
        self,
        scope: ArtifactScope,
        filename: str,
        version: int,
        writer: "_VersionWriter",
        mime_type: str,
        custom_metadata: dict[str, Any] | None,
        *,
        is_text: bool,
    ) -> VersionRecord:
        record = VersionRecord(
            name=filename,
            version=version,
            mime_type=mime_type,
            size=writer.size,
            sha256=writer.sha256,
            blob_key=writer.target.relative_to(self.root_dir).as_posix(),
            custom_metadata=dict(custom_metadata or {}),
            create_time=time.time(),
            is_text=is_text,
        )
        metadata = {
            "fileName": filename,
            "version": version,
            "mimeType": wire_mime_type(record),
            "canonicalUri": scope.canonical_uri(filename, version),
            "customMetadata": record.custom_metadata,
            "createTime": record.create_time,
            "size": record.size,
            "sha256": record.sha256,
        }
        path = writer.target.parent / METADATA_FILE
        data = json.dumps(metadata, default=str).encode()
        await _write_file(functools.partial(_write_atomically, path, data), path)
        return record

    async def delete(self, scope: ArtifactScope, *, filename: str) -> None:
        """Delete every version of `filename` and its files (its number keeps counting)."""
        self.version_dir(scope, filename, 0)
        versions = await self._index.list_version_metadata(scope, filename=filename)
        await self._index.delete(scope, filename=filename)
        for version in versions:
            folder = self.version_dir(scope, filename, version.version)
            await _run(_remove_version_dir, folder)

    # -- reads ----------------------------------------------------------------------------

    async def list_names(self, scope: ArtifactScope) -> list[str]:
        """Names of the session's artifacts and the user's `user:` artifacts, sorted."""
        return await self._index.list_names(scope)

    async def list_version_metadata(
        self, scope: ArtifactScope, *, filename: str
    ) -> list[ArtifactVersion]:
        """Metadata of every version of `filename`, ascending; ArtifactNotFound if none."""
        self.version_dir(scope, filename, 0)
        return await self._index.list_version_metadata(scope, filename=filename)

    async def get(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> ArtifactContent:
        """One version (latest if None) and its file; ArtifactNotFound if absent."""
        self.version_dir(scope, filename, 0)
        content = await self._index.get(scope, filename=filename, version=version)
        return replace(content, service=self)

    async def read_bytes(self, blob_key: str) -> bytes:
        """The whole file of a version."""
        path = self._blob_path(blob_key)
        try:
            return await _run(path.read_bytes)
        except FileNotFoundError as exc:
            raise storage_problem(
                BlobNotFound(blob_key), "The artifact's file is missing."
            ) from exc
        except OSError as exc:
            raise storage_problem(os_failure(exc, str(path)), "The file cannot be read.") from exc

    async def open(
        self, blob_key: str, *, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream bytes `start`..`end` (inclusive) of a version's file."""
        check_range(start, end, DEFAULT_CHUNK_SIZE)
        path = self._blob_path(blob_key)
        try:
            source = await _run(path.open, "rb")
        except FileNotFoundError as exc:
            raise storage_problem(
                BlobNotFound(blob_key), "The artifact's file is missing."
            ) from exc
        except OSError as exc:
            raise storage_problem(os_failure(exc, str(path)), "The file cannot be read.") from exc
        stop = range_stop(end, os.fstat(source.fileno()).st_size)
        return _read_range(source, start, stop)

    async def ping(self) -> None:
        """Raise ArtifactStorageUnavailable unless a file can be written under the root."""
        try:
            await _run(_write_atomically, self.root_dir / ".readyz", b"readyz")
        except OSError as exc:
            logger.warning("readiness: the artifact folder cannot be used: %s", exc)
            raise ArtifactStorageUnavailable("The artifact folder cannot be used.") from exc


def _segment(value: str, field: str) -> str:
    """`value` if it is one safe path segment (an id), else InvalidRequest."""
    if not value or value in {".", ".."} or any(c in value for c in "/\\\x00"):
        raise InvalidRequest(f"{field} {value!r} cannot be a folder name under the root.")
    return value


class _VersionWriter:
    """Writes one version's file: a temp file next to it, renamed into place when complete."""

    def __init__(self, target: Path, max_bytes: int) -> None:
        self.target = target
        self.max_bytes = max_bytes
        self.size = 0
        self._hash = hashlib.sha256()
        self._tmp: Path | None = None
        self._sink: BinaryIO | None = None

    @property
    def sha256(self) -> str:
        """The hex digest of what was written."""
        return self._hash.hexdigest()

    def open(self) -> None:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.target.parent, prefix=_TMP_PREFIX)
        self._tmp, self._sink = Path(name), os.fdopen(fd, "wb")

    def write(self, chunk: bytes) -> None:
        assert self._sink is not None
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise ArtifactTooLarge(f"Artifacts are limited to {self.max_bytes} bytes.")
        self._hash.update(chunk)
        self._sink.write(chunk)

    def finish(self) -> None:
        assert self._sink is not None
        assert self._tmp is not None
        self._sink.flush()
        os.fsync(self._sink.fileno())
        self._sink.close()
        os.replace(self._tmp, self.target)
        self._tmp = None

    def discard(self) -> None:
        if self._sink is not None:
            self._sink.close()
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=_TMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as sink:
            sink.write(data)
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def _remove_version_dir(folder: Path) -> None:
    if not folder.is_dir():
        return
    for child in folder.iterdir():
        child.unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError as exc:  # something else appeared in it: leave it
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise


async def _read_range(source: BinaryIO, start: int, stop: int) -> AsyncIterator[bytes]:
    try:
        await _run(source.seek, start)
        remaining = stop - start
        while remaining > 0:
            chunk = await _run(source.read, min(DEFAULT_CHUNK_SIZE, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        source.close()


async def _write_file(write: Callable[[], None], path: Path) -> None:
    """A blocking write of `path` under the root; its OSError becomes the problem clients see."""
    try:
        await _run(write)
    except OSError as exc:
        raise storage_problem(os_failure(exc, str(path)), "The artifact was not stored.") from exc


async def _run(func: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """A blocking filesystem call in a worker thread (anyio's, shared with Starlette)."""

    def call() -> _T:
        return func(*args, **kwargs)

    return await anyio.to_thread.run_sync(call)


__all__ = ["METADATA_FILE", "FileArtifactService"]
