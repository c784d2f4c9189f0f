"""`InMemoryBlobStore`: the blob store port kept in a dict, for tests and throwaway runs.

It holds every blob in process memory, so it is no fit for large uploads or more than one replica.
The clock is injectable so tests of garbage collection can age blobs without sleeping.
"""

import hashlib
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from app.artifacts.blobstore.base import (
    DEFAULT_CHUNK_SIZE,
    BlobInfo,
    BlobStore,
    check_key,
    check_max_bytes,
    check_older_than,
    check_range,
    content_key,
    range_stop,
)
from app.errors import BlobNotFound, BlobTooLarge

__all__ = ["InMemoryBlobStore"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class _Blob:
    data: bytes
    modified: datetime


class InMemoryBlobStore(BlobStore):
    """Blob store that keeps blobs in a dict; contents vanish with the process."""

    def __init__(self, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self._blobs: dict[str, _Blob] = {}
        self._clock = clock

    async def put_stream(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """Store the bytes of `chunks` under their content key."""
        check_max_bytes(max_bytes)
        parts: list[bytes] = []
        size = 0
        async for chunk in chunks:
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise BlobTooLarge(max_bytes)
            parts.append(chunk)
        data = b"".join(parts)
        sha256 = hashlib.sha256(data).hexdigest()
        key = content_key(sha256)
        blob = self._blobs.get(key)
        if blob is None:
            self._blobs[key] = _Blob(data, self._clock())
        else:
            blob.modified = self._clock()
        return BlobInfo(key=key, sha256=sha256, size=size)

    async def open_range(
        self,
        key: str,
        *,
        start: int = 0,
        end: int | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> AsyncIterator[bytes]:
        """Check the blob exists, then return an iterator over bytes `start`..`end` inclusive."""
        check_range(start, end, chunk_size)
        data = self._get(key).data
        return _iter_slices(memoryview(data)[start : range_stop(end, len(data))], chunk_size)

    async def exists(self, key: str) -> bool:
        """Return whether a blob is stored under `key`."""
        return check_key(key) in self._blobs

    async def size(self, key: str) -> int:
        """Return the blob's size in bytes."""
        return len(self._get(key).data)

    async def delete(self, key: str) -> None:
        """Remove the blob if present."""
        self._blobs.pop(check_key(key), None)

    async def list_keys(self, *, older_than: datetime | None = None) -> AsyncIterator[str]:
        """Yield stored keys, optionally only those last modified before `older_than`."""
        check_older_than(older_than)
        # Snapshot: deletes between yields must not break the iteration.
        for key, blob in list(self._blobs.items()):
            if older_than is None or blob.modified < older_than:
                yield key

    def prepare(self) -> None:
        """Nothing to create: no folders."""

    async def ping(self) -> None:
        """Always succeeds: the store is this process."""

    async def aclose(self) -> None:
        """Nothing to release; blobs stay readable."""

    def _get(self, key: str) -> _Blob:
        blob = self._blobs.get(check_key(key))
        if blob is None:
            raise BlobNotFound(key)
        return blob


async def _iter_slices(view: memoryview, chunk_size: int) -> AsyncIterator[bytes]:
    for offset in range(0, len(view), chunk_size):
        yield bytes(view[offset : offset + chunk_size])
