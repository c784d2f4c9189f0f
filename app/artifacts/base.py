"""The ArtifactService port: what the engine, the contexts and the routes need from artifacts.

A version becomes visible exactly when the event naming it in its `artifactDelta` commits: saving
is `stage` (bytes stored, version number allocated) and then an event carrying the version row,
either the engine's next event or, for REST writes and ADK's `save_artifact`, a user event
recorded by `save`. Every implementation passes the suite in `tests/artifacts/`.

agentd's own methods address a session through an `ArtifactScope` (a `user:` name reaches the
user's artifacts from any of their sessions). ADK's keyword-only methods (`save_artifact`,
`load_artifact`, `list_artifact_keys`, `delete_artifact`, `list_versions`,
`list_artifact_versions`, `get_artifact_version`) are built on them here, with ADK's answers for
absent artifacts (None or an empty list instead of ArtifactNotFound).

A version saved from a text Part reads back as a text Part, as ADK's do: its bytes are the UTF-8
text, its row says it was text (`VersionRecord.is_text`), and its wire metadata has no mime type
(ADK's rule: a version without one is text). Raw downloads serve it as `text/plain; charset=utf-8`.
"""

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, overload

from google.genai import types

from app.artifacts.models import ArtifactVersion, is_user_scoped
from app.errors import ArtifactNotFound, InvalidArtifact, InvalidRequest
from app.sessions.base import BaseSessionService, NewArtifactVersion
from app.sessions.models import EventActions

DEFAULT_MIME_TYPE = "application/octet-stream"
#: What a version saved from a text Part is stored and downloaded as.
TEXT_MIME_TYPE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class VersionRecord(NewArtifactVersion):
    """A version row as the artifact services stage and read it: also whether it was text.

    The session services carry staged versions to the event's transaction as the
    `NewArtifactVersion`s they accept and pass them through untouched, so the flag reaches the
    repository (and the in-memory store) with them.
    """

    is_text: bool = False


@dataclass(frozen=True)
class ArtifactScope:
    """Which session's (and, for `user:` names, which user's) artifacts a call addresses."""

    app_name: str
    user_id: str
    session_id: str

    def canonical_uri(self, name: str, version: int) -> str:
        """A stable URI for one version (`artifact://` + the REST path)."""
        base = f"artifact://apps/{self.app_name}/users/{self.user_id}"
        if not is_user_scoped(name):
            base += f"/sessions/{self.session_id}"
        return f"{base}/artifacts/{name}/versions/{version}"


@dataclass(frozen=True)
class ArtifactContent:
    """A version's metadata plus where its bytes are; `open` streams them."""

    metadata: ArtifactVersion
    blob_key: str
    service: "BaseArtifactService" = field(repr=False, compare=False)

    @property
    def media_type(self) -> str:
        """The Content-Type of a raw download (text versions have no mime type in metadata)."""
        return self.metadata.mime_type or TEXT_MIME_TYPE

    async def open(self, *, start: int = 0, end: int | None = None) -> AsyncIterator[bytes]:
        """Stream bytes `start`..`end` (inclusive) of this version."""
        return await self.service.open(self.blob_key, start=start, end=end)


def is_text_part(part: types.Part) -> bool:
    """Whether a Part is stored as text: it has text and no inline bytes (those win)."""
    has_bytes = part.inline_data is not None and part.inline_data.data is not None
    return not has_bytes and part.text is not None


def part_bytes(part: types.Part) -> tuple[bytes, str]:
    """The bytes and mime type a Part stores: inline data, or text as UTF-8."""
    if is_text_part(part):
        return (part.text or "").encode("utf-8"), TEXT_MIME_TYPE
    if part.inline_data is not None and part.inline_data.data is not None:
        return part.inline_data.data, part.inline_data.mime_type or DEFAULT_MIME_TYPE
    raise InvalidArtifact("An artifact Part needs inlineData or text.")


def stored_part(data: bytes, mime_type: str | None) -> types.Part:
    """A version's bytes as the Part ADK gives back: text if it has no mime type, else inline."""
    if mime_type is None:
        return types.Part(text=data.decode("utf-8"))
    return types.Part(inline_data=types.Blob(data=data, mime_type=mime_type))


def wire_mime_type(version: NewArtifactVersion) -> str | None:
    """The mime type ADK's metadata shows for a version: none for one saved from text."""
    if isinstance(version, VersionRecord) and version.is_text:
        return None
    return version.mime_type


def version_metadata(scope: ArtifactScope, version: NewArtifactVersion) -> ArtifactVersion:
    """The wire metadata of a (staged or stored) version seen through `scope`."""
    return ArtifactVersion(
        version=version.version,
        canonical_uri=scope.canonical_uri(version.name, version.version),
        custom_metadata=version.custom_metadata,
        create_time=version.create_time,
        mime_type=wire_mime_type(version),
        size=version.size,
        sha256=version.sha256,
    )


class BaseArtifactService(ABC):
    """Versioned, named artifacts of a session or of a user.

    Args:
        session_service: where `save_part`, `save_stream` and ADK's `save_artifact` record the
            user event that commits a version; None for a service that only reads, stages and
            collects garbage (those methods then raise ValueError).
    """

    def __init__(self, *, session_service: BaseSessionService | None = None) -> None:
        self.session_service = session_service

    def bind_session_service(self, session_service: BaseSessionService) -> None:
        """Record versions through `session_service`, unless one was given already.

        A Runner calls this with its own session service, so ADK code that builds an artifact
        service without arguments runs unchanged.
        """
        if self.session_service is None:
            self.session_service = session_service

    # -- writes ---------------------------------------------------------------------------

    @abstractmethod
    async def stage(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        chunks: AsyncIterable[bytes],
        mime_type: str = DEFAULT_MIME_TYPE,
        custom_metadata: dict[str, Any] | None = None,
    ) -> NewArtifactVersion:
        """Store a streamed body and allocate a version; it is visible once its event commits.

        The session is checked before the body is read, so a missing one costs no upload.

        Raises:
            SessionNotFound, InvalidArtifactName, ArtifactTooLarge, ServiceUnavailable.
        """

    @abstractmethod
    async def stage_part(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        artifact: types.Part,
        custom_metadata: dict[str, Any] | None = None,
    ) -> NewArtifactVersion:
        """`stage` for a google-genai Part (inline data or text): the bytes are already in hand."""

    async def save(
        self, sessions: BaseSessionService, scope: ArtifactScope, staged: NewArtifactVersion
    ) -> ArtifactVersion:
        """Commit a staged version through a user event of `sessions` carrying its delta."""
        await sessions.append_user_event(
            app_name=scope.app_name,
            user_id=scope.user_id,
            session_id=scope.session_id,
            actions=EventActions(artifact_delta={staged.name: staged.version}),
            invocation_prefix="a-",
            artifact_versions=[staged],
        )
        return version_metadata(scope, staged)

    async def save_part(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        artifact: types.Part,
        custom_metadata: dict[str, Any] | None = None,
    ) -> ArtifactVersion:
        """Store a Part as the next version and commit it with a user event (REST, ADK)."""
        sessions = self._sessions()
        staged = await self.stage_part(
            scope, filename=filename, artifact=artifact, custom_metadata=custom_metadata
        )
        return await self.save(sessions, scope, staged)

    async def save_stream(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        chunks: AsyncIterable[bytes],
        mime_type: str = DEFAULT_MIME_TYPE,
        custom_metadata: dict[str, Any] | None = None,
    ) -> ArtifactVersion:
        """Store a streamed body as the next version and commit it with a user event (REST)."""
        sessions = self._sessions()
        staged = await self.stage(
            scope,
            filename=filename,
            chunks=chunks,
            mime_type=mime_type,
            custom_metadata=custom_metadata,
        )
        return await self.save(sessions, scope, staged)

    @abstractmethod
    async def delete(self, scope: ArtifactScope, *, filename: str) -> None:
        """Delete every version of `filename` (numbers are not reused; bytes wait for gc).

        Raises:
            ArtifactNotFound: it has no version.
        """

    # -- reads ----------------------------------------------------------------------------

    @abstractmethod
    async def list_names(self, scope: ArtifactScope) -> list[str]:
        """Names of the session's artifacts and the user's `user:` artifacts, sorted."""

    @abstractmethod
    async def list_version_metadata(
        self, scope: ArtifactScope, *, filename: str
    ) -> list[ArtifactVersion]:
        """Metadata of every version of `filename`, ascending; ArtifactNotFound if none."""

    @overload
    async def list_versions(self, scope: ArtifactScope, /, *, filename: str) -> list[int]: ...

    @overload
    async def list_versions(
        self, /, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]: ...

    async def list_versions(
        self,
        scope: ArtifactScope | None = None,
        /,
        *,
        filename: str,
        app_name: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> list[int]:
        """Version numbers of `filename`, ascending.

        Called with a scope (agentd) it raises ArtifactNotFound for a name without versions;
        called with ADK's keywords it returns an empty list instead.
        """
        if scope is not None:
            metadata = await self.list_version_metadata(scope, filename=filename)
            return [m.version for m in metadata]
        if app_name is None or user_id is None:
            raise TypeError("list_versions needs a scope or app_name and user_id.")
        adk_scope = _adk_scope(app_name, user_id, session_id)
        try:
            metadata = await self.list_version_metadata(adk_scope, filename=filename)
        except ArtifactNotFound:
            return []
        return [m.version for m in metadata]

    @abstractmethod
    async def get(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> ArtifactContent:
        """One version (latest if None) and where its bytes are; ArtifactNotFound if absent."""

    async def load_part(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> types.Part:
        """One version as a Part (text, or inline data); ArtifactNotFound if absent."""
        content = await self.get(scope, filename=filename, version=version)
        data = await self.read_bytes(content.blob_key)
        return stored_part(data, content.metadata.mime_type)

    async def load_staged(self, staged: NewArtifactVersion) -> types.Part:
        """A staged version (not committed yet) as a Part, for the invocation that saved it."""
        return stored_part(await self.read_bytes(staged.blob_key), wire_mime_type(staged))

    @abstractmethod
    async def read_bytes(self, blob_key: str) -> bytes:
        """The whole blob (for JSON routes and the engine; raw routes stream instead)."""

    @abstractmethod
    async def open(
        self, blob_key: str, *, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream bytes `start`..`end` (inclusive) of a blob."""

    # -- operations -----------------------------------------------------------------------

    @abstractmethod
    async def ping(self) -> None:
        """Raise ServiceUnavailable unless the artifact bytes can be reached (readiness)."""

    # -- ADK's keyword-only methods -------------------------------------------------------

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        """Save and commit the next version of `filename` (ADK); its version number."""
        part = artifact if isinstance(artifact, types.Part) else types.Part.model_validate(artifact)
        saved = await self.save_part(
            _adk_scope(app_name, user_id, session_id),
            filename=filename,
            artifact=part,
            custom_metadata=custom_metadata,
        )
        return saved.version

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        """A version (latest if None) as a Part, or None if there is none (ADK)."""
        scope = _adk_scope(app_name, user_id, session_id)
        try:
            return await self.load_part(scope, filename=filename, version=version)
        except ArtifactNotFound:
            return None

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        """Names of the session's and the user's artifacts (ADK)."""
        return await self.list_names(_adk_scope(app_name, user_id, session_id))

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        """Delete every version of `filename`; nothing to delete is not an error (ADK)."""
        scope = _adk_scope(app_name, user_id, session_id)
        with contextlib.suppress(ArtifactNotFound):
            await self.delete(scope, filename=filename)

    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[ArtifactVersion]:
        """Metadata of every version of `filename`, ascending; empty if none (ADK)."""
        scope = _adk_scope(app_name, user_id, session_id)
        try:
            return await self.list_version_metadata(scope, filename=filename)
        except ArtifactNotFound:
            return []

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        """Metadata of one version (latest if None), or None if there is none (ADK)."""
        scope = _adk_scope(app_name, user_id, session_id)
        try:
            return (await self.get(scope, filename=filename, version=version)).metadata
        except ArtifactNotFound:
            return None

    def _sessions(self) -> BaseSessionService:
        if self.session_service is None:
            raise ValueError(f"{type(self).__name__} was built without a session_service.")
        return self.session_service


def _adk_scope(app_name: str, user_id: str, session_id: str | None) -> ArtifactScope:
    # ADK reads a missing session_id as "the user's artifacts"; agentd versions commit with a
    # session's event, so every call names a session (a `user:` name reaches the user scope).
    if session_id is None:
        raise InvalidRequest(
            "agentd addresses artifacts through a session: pass session_id "
            "(a 'user:' name reaches the user's artifacts from any of their sessions)."
        )
    return ArtifactScope(app_name=app_name, user_id=user_id, session_id=session_id)


__all__ = [
    "DEFAULT_MIME_TYPE",
    "TEXT_MIME_TYPE",
    "ArtifactContent",
    "ArtifactScope",
    "BaseArtifactService",
    "VersionRecord",
    "is_text_part",
    "part_bytes",
    "stored_part",
    "version_metadata",
    "wire_mime_type",
]
