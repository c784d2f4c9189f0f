"""What every artifact service that keeps its bytes in a `BlobStore` shares.

Staging streams the bytes into the blob store first (content-addressed, so a retried or abandoned
save leaves at most an orphan blob for `agentd gc`, never a visible version) and only then asks
the subclass for a version number; the subclass keeps the versions (database rows, or dicts).
Blob store failures become the problems clients see: too large (413), no space left (507) or
unavailable (503 `blob-store-unavailable` with Retry-After). What the store said (a server path,
an errno, an S3 endpoint) is logged, never put in a problem.
"""

import logging
import time
from abc import abstractmethod
from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from typing import Any

from google.genai import types

from app.artifacts.base import (
    DEFAULT_MIME_TYPE,
    ArtifactScope,
    BaseArtifactService,
    VersionRecord,
    is_text_part,
    part_bytes,
)
from app.artifacts.blobstore import BlobInfo, BlobStore
from app.artifacts.models import check_version_values, validate_artifact_name
from app.errors import (
    AgentdError,
    ArtifactStorageFull,
    ArtifactStorageUnavailable,
    ArtifactTooLarge,
    BlobNotFound,
    BlobStoreError,
    BlobStoreFull,
    BlobTooLarge,
)
from app.sessions.base import BaseSessionService

logger = logging.getLogger("agentd.artifacts")


class BlobBackedArtifactService(BaseArtifactService):
    """Artifact bytes in a BlobStore; subclasses keep the versions that name them."""

    def __init__(
        self,
        blob_store: BlobStore,
        *,
        max_artifact_bytes: int,
        session_service: BaseSessionService | None = None,
    ) -> None:
        super().__init__(session_service=session_service)
        self.blob_store = blob_store
        self.max_artifact_bytes = max_artifact_bytes

    @abstractmethod
    async def _require_session(self, scope: ArtifactScope) -> None:
        """Raise SessionNotFound unless the scope's session exists."""

    @abstractmethod
    async def _allocate_version(self, scope: ArtifactScope, filename: str) -> int:
        """The next free version of `filename` (SessionNotFound if the session is gone)."""

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
        """Store a streamed body and allocate a version; the row commits with the carrying event.

        The session is checked first, so a missing one is refused before a (possibly big) body
        is read.
        """
        validate_artifact_name(filename)
        check_version_values(mime_type, custom_metadata)
        await self._require_session(scope)
        blob = await self._put(
            self.blob_store.put_stream(chunks, max_bytes=self.max_artifact_bytes)
        )
        return await self._staged(scope, filename, blob, mime_type, custom_metadata, is_text=False)

    async def stage_part(
        self,
        scope: ArtifactScope,
        *,
        filename: str,
        artifact: types.Part,
        custom_metadata: dict[str, Any] | None = None,
    ) -> VersionRecord:
        """`stage` for a google-genai Part (inline data or text): the bytes are already in hand."""
        validate_artifact_name(filename)
        data, mime_type = part_bytes(artifact)
        check_version_values(mime_type, custom_metadata)
        if len(data) > self.max_artifact_bytes:
            raise ArtifactTooLarge(f"Artifacts are limited to {self.max_artifact_bytes} bytes.")
        blob = await self._put(self.blob_store.put_bytes(data))
        return await self._staged(
            scope, filename, blob, mime_type, custom_metadata, is_text=is_text_part(artifact)
        )

    async def _put(self, storing: Awaitable[BlobInfo]) -> BlobInfo:
        try:
            return await storing
        except BlobTooLarge as exc:
            raise ArtifactTooLarge(
                f"Artifacts are limited to {self.max_artifact_bytes} bytes."
            ) from exc
        except BlobStoreError as exc:
            raise storage_problem(exc, "The artifact was not stored.") from exc

    async def _staged(
        self,
        scope: ArtifactScope,
        filename: str,
        blob: BlobInfo,
        mime_type: str,
        custom_metadata: dict[str, Any] | None,
        *,
        is_text: bool,
    ) -> VersionRecord:
        return VersionRecord(
            name=filename,
            version=await self._allocate_version(scope, filename),
            mime_type=mime_type,
            size=blob.size,
            sha256=blob.sha256,
            blob_key=blob.key,
            custom_metadata=dict(custom_metadata or {}),
            create_time=time.time(),
            is_text=is_text,
        )

    # -- bytes ----------------------------------------------------------------------------

    async def read_bytes(self, blob_key: str) -> bytes:
        """The whole blob (for JSON routes and the engine; raw routes stream instead)."""
        try:
            return await self.blob_store.read_bytes(blob_key)
        except BlobStoreError as exc:
            raise storage_problem(exc, "The artifact's bytes cannot be read.") from exc

    async def open(
        self, blob_key: str, *, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream bytes `start`..`end` (inclusive) of a blob."""
        try:
            return await self.blob_store.open_range(blob_key, start=start, end=end)
        except BlobStoreError as exc:
            raise storage_problem(exc, "The artifact's bytes cannot be read.") from exc

    async def ping(self) -> None:
        """Raise ArtifactStorageUnavailable unless the blob store can be written (readiness)."""
        try:
            await self.blob_store.ping()
        except Exception as exc:  # a probe reports any failure as "not ready", whatever it was
            logger.warning("readiness: the blob store cannot be used: %s", exc)
            raise ArtifactStorageUnavailable("The blob store cannot be used.") from exc


def storage_problem(exc: BlobStoreError, outcome: str) -> AgentdError:
    """The problem a client sees for a failed blob store call; the store's text goes to the log."""
    if isinstance(exc, BlobStoreFull):
        logger.error("the blob store is full: %s", exc)
        return ArtifactStorageFull(f"The blob store has no space left. {outcome}")
    if isinstance(exc, BlobNotFound):
        # A version whose blob is not in this store: a local blob folder that replicas do not
        # share (each sees only its own uploads), or a store tampered with.
        logger.error("an artifact version names a missing blob: %s", exc)
    else:
        logger.warning("the blob store failed: %s", exc)
    return ArtifactStorageUnavailable(f"The blob store cannot be used right now. {outcome}")
