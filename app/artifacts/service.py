"""The ArtifactService: versioned, named blobs of a session or of a user.

Saving is two steps, so that a version becomes visible exactly when the event naming it commits:
`stage` streams the bytes into the blob store (content-addressed) and allocates the next version
number in a tiny transaction of its own (see `StorageArtifactCounter`); the version row itself is
inserted by `SessionService.append_event`, in the transaction of the event whose `artifactDelta`
names it. A staged version whose event never commits leaves an orphan blob (removed by
`agentd gc`) and a skipped number, never a visible version. REST writes use `save`, which records
a user event carrying the delta.

Reads go straight to the version rows: they are the single source of truth for what exists.
"""

import functools
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from google.genai import types
from sqlalchemy import Select, Table, bindparam, delete, exists, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from app.artifacts.blobstore import (
    BlobInfo,
    BlobNotFound,
    BlobStore,
    BlobStoreUnavailable,
    BlobTooLarge,
)
from app.artifacts.models import ArtifactVersion, is_user_scoped, validate_artifact_name
from app.db import fast
from app.db.engine import DbSession, create_sessionmaker, write_options
from app.db.tables import StorageArtifactCounter, StorageArtifactVersion
from app.db.tables.artifacts import USER_SCOPE
from app.db.units import Units
from app.errors import (
    ArtifactNotFound,
    ArtifactTooLarge,
    InvalidArtifact,
    ServiceUnavailable,
    SessionNotFound,
)
from app.sessions.base import BaseSessionService, NewArtifactVersion
from app.sessions.models import EventActions
from app.sessions.statements import SESSION_PK, session_key

DEFAULT_MIME_TYPE = "application/octet-stream"


@dataclass(frozen=True)
class ArtifactScope:
    """Which session's (or, for `user:` names, which user's) artifacts a call addresses."""

    app_name: str
    user_id: str
    session_id: str

    def scope_id(self, name: str) -> str:
        """The session id column value for `name`: the session, or '' for user scope."""
        return USER_SCOPE if is_user_scoped(name) else self.session_id

    def canonical_uri(self, name: str, version: int) -> str:
        """A stable URI for one version (`artifact://` + the REST path)."""
        base = f"artifact://apps/{self.app_name}/users/{self.user_id}"
        if not is_user_scoped(name):
            base += f"/sessions/{self.session_id}"
        return f"{base}/artifacts/{name}/versions/{version}"


@dataclass(frozen=True)
class ArtifactContent:
    """A version's metadata plus where its bytes are."""

    metadata: ArtifactVersion
    blob_key: str


def part_bytes(part: types.Part) -> tuple[bytes, str]:
    """The bytes and mime type a Part stores: inline data, or text as UTF-8."""
    if part.inline_data is not None and part.inline_data.data is not None:
        return part.inline_data.data, part.inline_data.mime_type or DEFAULT_MIME_TYPE
    if part.text is not None:
        return part.text.encode("utf-8"), "text/plain"
    raise InvalidArtifact("An artifact Part needs inlineData or text.")


_counters = cast(Table, StorageArtifactCounter.__table__)


_versions = cast(Table, StorageArtifactVersion.__table__)
_VERSION_OF_NAME = (
    _versions.c.app_name == bindparam("k_app"),
    _versions.c.user_id == bindparam("k_user"),
    _versions.c.session_id == bindparam("k_scope"),
    _versions.c.name == bindparam("k_name"),
)
_LATEST_VERSION = (
    select(_versions).where(*_VERSION_OF_NAME).order_by(_versions.c.version.desc()).limit(1)
)
_EXACT_VERSION = select(_versions).where(
    *_VERSION_OF_NAME, _versions.c.version == bindparam("k_version")
)


@functools.cache  # one statement object per dialect: app.db.fast compiles each once
def _next_version_upsert(dialect: str) -> Any:
    """Counter row upsert returning the next free version (executed with the row's values)."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(_counters)
        .on_conflict_do_update(
            index_elements=["app_name", "user_id", "session_id", "name"],
            set_={"next_version": _counters.c.next_version + 1},
        )
        .returning(_counters.c.next_version)
    )


class ArtifactService:
    """Artifact versions in the database, bytes in a BlobStore."""

    def __init__(
        self, db_engine: AsyncEngine, blob_store: BlobStore, *, max_artifact_bytes: int
    ) -> None:
        self._sessionmaker = create_sessionmaker(db_engine)
        self._units = Units(db_engine)
        self._dialect = db_engine.dialect.name
        self._next_version = _next_version_upsert(self._dialect)
        self.blob_store = blob_store
        self.max_artifact_bytes = max_artifact_bytes

    # -- writes ---------------------------------------------------------------------------

    async def stage(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        chunks: AsyncIterable[bytes],
        mime_type: str = DEFAULT_MIME_TYPE,
        custom_metadata: dict[str, Any] | None = None,
    ) -> NewArtifactVersion:
        """Store a streamed body and allocate a version; the row commits with the carrying event.

        The session is checked first, so a missing one is refused before a (possibly big) body
        is read.
        """
        validate_artifact_name(filename)
        await self._session_pk(scope)
        blob = await self._put(
            self.blob_store.put_stream(chunks, max_bytes=self.max_artifact_bytes)
        )
        return await self._staged(scope, filename, blob, mime_type, custom_metadata)

    async def stage_part(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        artifact: types.Part,
        custom_metadata: dict[str, Any] | None = None,
    ) -> NewArtifactVersion:
        """`stage` for a google-genai Part (inline data or text): the bytes are already in hand."""
        validate_artifact_name(filename)
        data, mime_type = part_bytes(artifact)
        if len(data) > self.max_artifact_bytes:
            raise ArtifactTooLarge(f"Artifacts are limited to {self.max_artifact_bytes} bytes.")
        blob = await self._put(self.blob_store.put_bytes(data))
        return await self._staged(scope, filename, blob, mime_type, custom_metadata)

    async def _put(self, storing: Awaitable[BlobInfo]) -> BlobInfo:
        try:
            return await storing
        except BlobTooLarge as exc:
            raise ArtifactTooLarge(
                f"Artifacts are limited to {self.max_artifact_bytes} bytes."
            ) from exc
        except BlobStoreUnavailable as exc:
            raise ServiceUnavailable("The blob store is unreachable.") from exc

    async def _staged(
        self,
        scope: ArtifactScope,
        filename: str,
        blob: BlobInfo,
        mime_type: str,
        custom_metadata: dict[str, Any] | None,
    ) -> NewArtifactVersion:
        version = await self._allocate_version(scope, filename)
        return NewArtifactVersion(
            name=filename,
            version=version,
            mime_type=mime_type,
            size=blob.size,
            sha256=blob.sha256,
            blob_key=blob.key,
            custom_metadata=dict(custom_metadata or {}),
            create_time=time.time(),
        )

    async def save(
        self,
        sessions: BaseSessionService,
        scope: ArtifactScope,
        staged: NewArtifactVersion,
    ) -> ArtifactVersion:
        """Commit a staged version through a user event carrying its artifactDelta (REST)."""
        await sessions.append_user_event(
            app_name=scope.app_name,
            user_id=scope.user_id,
            session_id=scope.session_id,
            actions=EventActions(artifact_delta={staged.name: staged.version}),
            invocation_prefix="a-",
            artifact_versions=[staged],
        )
        return self._to_metadata(scope, staged)

    async def delete(self, scope: ArtifactScope, *, filename: str) -> None:
        """Delete every version of `filename` (its blobs are left for `agentd gc`)."""
        validate_artifact_name(filename)
        async with self._sessionmaker() as db, db.begin():
            await db.connection(execution_options=write_options)
            await self._require_session(db, scope)
            result = await db.execute(
                delete(StorageArtifactVersion).where(*self._name_filter(scope, filename))
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise ArtifactNotFound(f"No artifact named {filename!r}.")

    # -- reads ----------------------------------------------------------------------------

    async def list_names(self, scope: ArtifactScope) -> list[str]:
        """Names of the session's artifacts and the user's `user:` artifacts, sorted."""
        query = (
            select(StorageArtifactVersion.name)
            .where(
                StorageArtifactVersion.app_name == scope.app_name,
                StorageArtifactVersion.user_id == scope.user_id,
                StorageArtifactVersion.session_id.in_([scope.session_id, USER_SCOPE]),
            )
            .distinct()
            .order_by(StorageArtifactVersion.name)
        )
        return [str(n) for n in await self._read_all(scope, query)]

    async def list_versions(self, scope: ArtifactScope, *, filename: str) -> list[int]:
        """Version numbers of `filename`, ascending."""
        return [m.version for m in await self.list_version_metadata(scope, filename=filename)]

    async def list_version_metadata(
        self, scope: ArtifactScope, *, filename: str
    ) -> list[ArtifactVersion]:
        """Metadata of every version of `filename`, ascending; ArtifactNotFound if none."""
        validate_artifact_name(filename)
        query = (
            select(StorageArtifactVersion)
            .where(*self._name_filter(scope, filename))
            .order_by(StorageArtifactVersion.version)
        )
        rows = await self._read_all(scope, query)
        if not rows:
            raise ArtifactNotFound(f"No artifact named {filename!r}.")
        return [self._row_metadata(scope, row) for row in rows]

    async def get(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> ArtifactContent:
        """One version (latest if None) with its blob key; ArtifactNotFound if absent."""
        validate_artifact_name(filename)
        params = {
            **session_key(scope.app_name, scope.user_id, scope.session_id),
            "k_scope": scope.scope_id(filename),
            "k_name": filename,
        }
        statement = _LATEST_VERSION if version is None else _EXACT_VERSION
        if version is not None:
            params["k_version"] = version

        def unit(db: Connection) -> Any:
            if fast.scalar(db, SESSION_PK, params) is None:
                raise SessionNotFound(f"Session {scope.session_id!r} does not exist.")
            return fast.first(db, statement, params)

        # One read unit: every artifact read (the engine's load_artifact too) passes here.
        row = await self._units.read(unit)
        if row is None:
            suffix = "" if version is None else f" version {version}"
            raise ArtifactNotFound(f"No artifact named {filename!r}{suffix}.")
        return ArtifactContent(metadata=self._row_metadata(scope, row), blob_key=row.blob_key)

    async def load_part(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> types.Part:
        """One version as a Part with inline data (ADK's load_artifact)."""
        content = await self.get(scope, filename=filename, version=version)
        data = await self.read_bytes(content.blob_key)
        return types.Part(inline_data=types.Blob(data=data, mime_type=content.metadata.mime_type))

    async def read_bytes(self, blob_key: str) -> bytes:
        """The whole blob (for JSON routes and the engine; raw routes stream instead)."""
        try:
            return await self.blob_store.read_bytes(blob_key)
        except BlobNotFound as exc:  # a row without its blob: storage was tampered with
            raise ServiceUnavailable("The artifact's bytes are missing from the store.") from exc
        except BlobStoreUnavailable as exc:
            raise ServiceUnavailable("The blob store is unreachable.") from exc

    async def open(
        self, blob_key: str, *, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream bytes `start`..`end` (inclusive) of a blob."""
        try:
            return await self.blob_store.open_range(blob_key, start=start, end=end)
        except (BlobNotFound, BlobStoreUnavailable) as exc:
            raise ServiceUnavailable("The artifact's bytes are unavailable.") from exc

    # -- maintenance ----------------------------------------------------------------------

    async def collect_garbage(self, *, grace_seconds: float) -> list[str]:
        """Delete blobs no version row references that are older than the grace period.

        The grace period protects saves in flight: their blob is written (or refreshed) before
        their row commits. Each candidate is re-checked right before deletion.
        """
        cutoff = datetime.now(UTC) - timedelta(seconds=grace_seconds)
        removed: list[str] = []
        async for key in self.blob_store.list_keys(older_than=cutoff):
            async with self._sessionmaker() as db:
                referenced = await db.scalar(
                    select(exists().where(StorageArtifactVersion.blob_key == key))
                )
            if not referenced:
                await self.blob_store.delete(key)
                removed.append(key)
        return removed

    # -- helpers --------------------------------------------------------------------------

    async def _session_pk(self, scope: ArtifactScope) -> int:
        async with self._sessionmaker() as db:
            return await self._require_session(db, scope)

    @staticmethod
    async def _require_session(db: DbSession, scope: ArtifactScope) -> int:
        pk = await db.scalar(
            SESSION_PK, session_key(scope.app_name, scope.user_id, scope.session_id)
        )
        if pk is None:
            raise SessionNotFound(f"Session {scope.session_id!r} does not exist.")
        return int(pk)

    async def _read_all(self, scope: ArtifactScope, query: Select[Any]) -> list[Any]:
        async with self._sessionmaker() as db:
            await self._require_session(db, scope)
            return list((await db.scalars(query)).all())

    async def _allocate_version(self, scope: ArtifactScope, filename: str) -> int:
        # Core statements built once (see app.sessions.database): this runs in every turn whose
        # tool saves an artifact.
        def unit(db: Connection) -> int:
            ids = session_key(scope.app_name, scope.user_id, scope.session_id)
            session_pk = fast.scalar(db, SESSION_PK, ids)
            if session_pk is None:
                raise SessionNotFound(f"Session {scope.session_id!r} does not exist.")
            return int(
                fast.scalar(
                    db,
                    self._next_version,
                    {
                        "app_name": scope.app_name,
                        "user_id": scope.user_id,
                        "session_id": scope.scope_id(filename),
                        "name": filename,
                        "session_pk": None if is_user_scoped(filename) else session_pk,
                        "next_version": 1,
                    },
                )
            )

        next_version = await self._units.write("allocate_version", unit)
        return int(next_version) - 1

    @staticmethod
    def _name_filter(scope: ArtifactScope, filename: str) -> tuple[Any, ...]:
        return (
            StorageArtifactVersion.app_name == scope.app_name,
            StorageArtifactVersion.user_id == scope.user_id,
            StorageArtifactVersion.session_id == scope.scope_id(filename),
            StorageArtifactVersion.name == filename,
        )

    @staticmethod
    def _to_metadata(scope: ArtifactScope, staged: NewArtifactVersion) -> ArtifactVersion:
        return ArtifactVersion(
            version=staged.version,
            canonical_uri=scope.canonical_uri(staged.name, staged.version),
            custom_metadata=staged.custom_metadata,
            create_time=staged.create_time,
            mime_type=staged.mime_type,
            size=staged.size,
            sha256=staged.sha256,
        )

    @classmethod
    def _row_metadata(cls, scope: ArtifactScope, row: StorageArtifactVersion) -> ArtifactVersion:
        return cls._to_metadata(
            scope,
            NewArtifactVersion(
                name=row.name,
                version=row.version,
                mime_type=row.mime_type,
                size=row.size,
                sha256=row.sha256,
                blob_key=row.blob_key,
                custom_metadata=row.custom_metadata,
                create_time=row.create_time,
            ),
        )
