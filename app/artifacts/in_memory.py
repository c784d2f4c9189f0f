"""ArtifactService kept in process memory: for tests, `InMemoryRunner` and embedded use.

It is the in-memory twin of the database service, and works the same way: the version rows live
with the session store (`InMemorySessionService`, the in-memory counterpart of the database both
database services share), inserted by `append_event` together with the event whose
`artifactDelta` names them, so a staged version becomes visible exactly when that event commits.
Versions count from 0 per name and are never reused, `user:` names are shared by the user's
sessions, and session artifacts (with their counters) die with their session. Bytes live in a
blob store (an `InMemoryBlobStore` unless one is given).
"""

from app.artifacts.base import ArtifactContent, ArtifactScope, version_metadata
from app.artifacts.blob_backed import BlobBackedArtifactService
from app.artifacts.blobstore import BlobStore, InMemoryBlobStore
from app.artifacts.models import ArtifactVersion, validate_artifact_name
from app.errors import ArtifactNotFound, SessionNotFound
from app.sessions.base import BaseSessionService, NewArtifactVersion
from app.sessions.in_memory import InMemorySessionService

#: AGENTD_MAX_ARTIFACT_BYTES's default.
DEFAULT_MAX_ARTIFACT_BYTES = 64 * 1024 * 1024


class InMemoryArtifactService(BlobBackedArtifactService):
    """Artifact versions with the in-memory session store, bytes in a blob store."""

    def __init__(
        self,
        *,
        session_service: InMemorySessionService | None = None,
        blob_store: BlobStore | None = None,
        max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES,
    ) -> None:
        super().__init__(
            blob_store or InMemoryBlobStore(),
            max_artifact_bytes=max_artifact_bytes,
            session_service=session_service,
        )
        self._bound = session_service

    @property
    def _store(self) -> InMemorySessionService:
        """The session store whose events commit the versions (see `bind_session_service`)."""
        if self._bound is None:
            raise ValueError(
                "InMemoryArtifactService needs the InMemorySessionService whose events commit "
                "its versions: pass session_service=..., or hand both to a Runner, which binds "
                "its session service."
            )
        return self._bound

    def bind_session_service(self, session_service: BaseSessionService) -> None:
        """Commit versions through `session_service`, unless one was given already.

        ADK's InMemoryArtifactService takes no arguments; a Runner calls this with its own
        session service, so ADK code that builds the two separately runs unchanged.
        """
        if self._bound is not None:
            return
        if not isinstance(session_service, InMemorySessionService):
            raise TypeError(
                "InMemoryArtifactService keeps its versions in an InMemorySessionService; with "
                f"{type(session_service).__name__} use DatabaseArtifactService."
            )
        self._bound = session_service
        self.session_service = session_service

    # -- writes ---------------------------------------------------------------------------

    async def _require_session(self, scope: ArtifactScope) -> None:
        if not self._store.has_session(scope.app_name, scope.user_id, scope.session_id):
            raise SessionNotFound(f"Session {scope.session_id!r} does not exist.")

    async def _allocate_version(self, scope: ArtifactScope, filename: str) -> int:
        return self._store.allocate_artifact_version(
            scope.app_name, scope.user_id, scope.session_id, filename
        )

    async def delete(self, scope: ArtifactScope, *, filename: str) -> None:
        """Delete every version of `filename` (its number keeps counting)."""
        validate_artifact_name(filename)
        await self._require_session(scope)
        if not self._store.delete_artifact_rows(
            scope.app_name, scope.user_id, scope.session_id, filename
        ):
            raise ArtifactNotFound(f"No artifact named {filename!r}.")

    # -- reads ----------------------------------------------------------------------------

    async def list_names(self, scope: ArtifactScope) -> list[str]:
        """Names of the session's artifacts and the user's `user:` artifacts, sorted."""
        return sorted({row.name for row in await self._rows(scope)})

    async def list_version_metadata(
        self, scope: ArtifactScope, *, filename: str
    ) -> list[ArtifactVersion]:
        """Metadata of every version of `filename`, ascending; ArtifactNotFound if none."""
        versions = await self._versions(scope, filename)
        if not versions:
            raise ArtifactNotFound(f"No artifact named {filename!r}.")
        return [version_metadata(scope, versions[v]) for v in sorted(versions)]

    async def get(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> ArtifactContent:
        """One version (latest if None) with its blob key; ArtifactNotFound if absent."""
        versions = await self._versions(scope, filename)
        wanted = max(versions, default=None) if version is None else version
        stored = None if wanted is None else versions.get(wanted)
        if stored is None:
            suffix = "" if version is None else f" version {version}"
            raise ArtifactNotFound(f"No artifact named {filename!r}{suffix}.")
        return ArtifactContent(
            metadata=version_metadata(scope, stored), blob_key=stored.blob_key, service=self
        )

    async def _versions(self, scope: ArtifactScope, filename: str) -> dict[int, NewArtifactVersion]:
        validate_artifact_name(filename)
        return {row.version: row for row in await self._rows(scope) if row.name == filename}

    async def _rows(self, scope: ArtifactScope) -> list[NewArtifactVersion]:
        await self._require_session(scope)
        return self._store.artifact_rows(scope.app_name, scope.user_id, scope.session_id)


__all__ = ["DEFAULT_MAX_ARTIFACT_BYTES", "InMemoryArtifactService"]
