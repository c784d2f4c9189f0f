"""DatabaseArtifactService: artifact versions in the database, bytes in a BlobStore.

A version number is allocated by `stage` in a tiny write unit of its own (see
`StorageArtifactCounter`); the version row itself is inserted by `SessionService.append_event`, in
the transaction of the event whose `artifactDelta` names it. A staged version whose event never
commits leaves an orphan blob (removed by `collect_garbage`, i.e. `agentd gc`) and a skipped
number, never a visible version. Reads go straight to the version rows, the single source of
truth for what exists; each public method is one unit of work (`get`, which every artifact read
passes through, is one read unit: the session check and the version row together).
"""

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from app.artifacts.base import ArtifactContent, ArtifactScope, VersionRecord, version_metadata
from app.artifacts.blob_backed import BlobBackedArtifactService
from app.artifacts.blobstore import BlobStore
from app.artifacts.models import ArtifactVersion, validate_artifact_name
from app.db.repositories.artifacts import ArtifactRepository
from app.db.uow import Db, UnitOfWork, from_row
from app.errors import ArtifactNotFound, SessionNotFound
from app.sessions.base import BaseSessionService

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")


class DatabaseArtifactService(BlobBackedArtifactService):
    """Artifact versions in the database, bytes in a BlobStore."""

    def __init__(
        self,
        db_engine: "AsyncEngine",
        blob_store: BlobStore,
        *,
        max_artifact_bytes: int,
        session_service: BaseSessionService | None = None,
    ) -> None:
        super().__init__(
            blob_store, max_artifact_bytes=max_artifact_bytes, session_service=session_service
        )
        self._uow = UnitOfWork(db_engine)

    # -- writes ---------------------------------------------------------------------------

    async def _require_session(self, scope: ArtifactScope) -> None:
        await self._uow.read(lambda db: _session_pk(ArtifactRepository(db), scope))

    async def _allocate_version(self, scope: ArtifactScope, filename: str) -> int:
        # One write unit; it runs in every turn whose tool saves an artifact.
        def unit(db: Db) -> int:
            artifacts = ArtifactRepository(db)
            return artifacts.allocate_version(
                **_named(scope, filename),
                session_pk=_session_pk(artifacts, scope),
            )

        return await self._uow.write("allocate_version", unit)

    async def delete(self, scope: ArtifactScope, *, filename: str) -> None:
        """Delete every version of `filename` (its blobs are left for `agentd gc`)."""
        validate_artifact_name(filename)

        def unit(db: Db) -> int:
            artifacts = ArtifactRepository(db)
            _session_pk(artifacts, scope)
            return artifacts.delete_versions(**_named(scope, filename))

        if await self._uow.write("delete_artifact", unit) == 0:
            raise ArtifactNotFound(f"No artifact named {filename!r}.")

    # -- reads ----------------------------------------------------------------------------

    async def list_names(self, scope: ArtifactScope) -> list[str]:
        """Names of the session's artifacts and the user's `user:` artifacts, sorted."""
        return await self._read(
            scope,
            lambda artifacts: artifacts.names(
                app_name=scope.app_name, user_id=scope.user_id, session_id=scope.session_id
            ),
        )

    async def list_version_metadata(
        self, scope: ArtifactScope, *, filename: str
    ) -> list[ArtifactVersion]:
        """Metadata of every version of `filename`, ascending; ArtifactNotFound if none."""
        validate_artifact_name(filename)
        rows = await self._read(
            scope,
            lambda artifacts: artifacts.versions(**_named(scope, filename)),
        )
        if not rows:
            raise ArtifactNotFound(f"No artifact named {filename!r}.")
        return [version_metadata(scope, _stored(row)) for row in rows]

    async def get(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> ArtifactContent:
        """One version (latest if None) with its blob key; ArtifactNotFound if absent."""
        validate_artifact_name(filename)
        row = await self._read(
            scope,
            lambda artifacts: artifacts.version(**_named(scope, filename), version=version),
        )
        if row is None:
            suffix = "" if version is None else f" version {version}"
            raise ArtifactNotFound(f"No artifact named {filename!r}{suffix}.")
        stored = _stored(row)
        return ArtifactContent(
            metadata=version_metadata(scope, stored), blob_key=stored.blob_key, service=self
        )

    async def _read(self, scope: ArtifactScope, query: Callable[[ArtifactRepository], T]) -> T:
        """`query` in one read unit, after the session check (SessionNotFound if it is gone)."""

        def unit(db: Db) -> T:
            artifacts = ArtifactRepository(db)
            _session_pk(artifacts, scope)
            return query(artifacts)

        return await self._uow.read(unit)

    # -- maintenance ----------------------------------------------------------------------

    async def collect_garbage(self, *, grace_seconds: float) -> list[str]:
        """Delete blobs no version row references that are older than the grace period.

        The grace period protects saves in flight: their blob is written (or refreshed) before
        their row commits. Each candidate is re-checked right before deletion.
        """
        cutoff = datetime.now(UTC) - timedelta(seconds=grace_seconds)
        removed: list[str] = []
        async for key in self.blob_store.list_keys(older_than=cutoff):
            if not await self._uow.read(functools.partial(_blob_referenced, key)):
                await self.blob_store.delete(key)
                removed.append(key)
        return removed


def _session_pk(artifacts: ArtifactRepository, scope: ArtifactScope) -> int:
    pk = artifacts.session_pk(scope.app_name, scope.user_id, scope.session_id)
    if pk is None:
        raise SessionNotFound(f"Session {scope.session_id!r} does not exist.")
    return pk


def _blob_referenced(blob_key: str, db: Db) -> bool:
    return ArtifactRepository(db).blob_referenced(blob_key)


def _named(scope: ArtifactScope, filename: str) -> dict[str, str]:
    """The repository's address of one artifact name in `scope`."""
    return {
        "app_name": scope.app_name,
        "user_id": scope.user_id,
        "session_id": scope.session_id,
        "name": filename,
    }


def _stored(row: Any) -> VersionRecord:
    return from_row(VersionRecord, row)


__all__ = ["DatabaseArtifactService"]
