"""The `BlobStore` port: content-addressed, streamed storage of artifact bytes.

This module owns the contract every blob backend implements (local folder, S3-compatible,
in-memory), the key format and the streaming hash-and-spool helper the file-backed backends
share; the errors a backend raises live in `app.errors` with every other error (re-exported
here). Blobs are immutable and named by the sha256 of their bytes, so a blob whose artifact
version row never commits is an orphan for `agentd gc`, never a visible version (DESIGN.md
section 3).

Keys look like ``sha256/ab/cd/abcd...`` (64 lowercase hex digits, fanned out over two directory
levels). A store only ever accepts keys of that exact form, so no path or object name is ever
built from caller input. hashlib is used directly: it releases the GIL on large buffers, so
hashing runs in the same worker thread as the file writes without blocking the event loop.
"""

import abc
import errno
import hashlib
import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO

import anyio.to_thread

from app.errors import (
    BlobNotFound,
    BlobStoreError,
    BlobStoreFull,
    BlobStoreUnavailable,
    BlobTooLarge,
)

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "BlobInfo",
    "BlobNotFound",
    "BlobStore",
    "BlobStoreError",
    "BlobStoreFull",
    "BlobStoreUnavailable",
    "BlobTooLarge",
    "check_key",
    "check_max_bytes",
    "check_older_than",
    "check_range",
    "content_key",
    "is_key",
    "os_failure",
    "range_stop",
    "spool_hashed",
]

DEFAULT_CHUNK_SIZE = 64 * 1024
# Chunks arriving from the network are small; batching them into ~1 MiB writes keeps the number of
# worker-thread hops low while memory stays bounded by this plus one incoming chunk.
_SPOOL_BATCH_SIZE = 1024 * 1024

# Out of space on the disk, in the user's quota or under the file-size limit: the store is full,
# not broken (507, not 503).
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})

_KEY_RE = re.compile(r"sha256/([0-9a-f]{2})/([0-9a-f]{2})/\1\2[0-9a-f]{60}")
_HEX_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """What a put stored: the content-addressed key, the hex sha256 of the bytes and their size."""

    key: str
    sha256: str
    size: int


def content_key(sha256_hex: str) -> str:
    """Return the store key for a lowercase hex sha256 digest."""
    if not _HEX_RE.fullmatch(sha256_hex):
        raise ValueError(f"not a lowercase hex sha256 digest: {sha256_hex!r}")
    return f"sha256/{sha256_hex[:2]}/{sha256_hex[2:4]}/{sha256_hex}"


def check_key(key: str) -> str:
    """Return `key` unchanged if it is a content-addressed key, else raise ValueError."""
    if not is_key(key):
        raise ValueError(f"not a blob key: {key!r}")
    return key


def is_key(key: str) -> bool:
    """Return whether `key` has the content-addressed form stores produce."""
    return _KEY_RE.fullmatch(key) is not None


def check_range(start: int, end: int | None, chunk_size: int) -> None:
    """Raise ValueError unless `start`/`end` (inclusive) and `chunk_size` describe a valid read."""
    if start < 0:
        raise ValueError(f"range start must be >= 0, got {start}")
    if end is not None and end < start:
        raise ValueError(f"range end {end} is before start {start}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")


def range_stop(end: int | None, total: int) -> int:
    """The exclusive stop offset of a read up to `end` (inclusive) of a blob of `total` bytes."""
    return total if end is None else min(end + 1, total)


def os_failure(exc: OSError, what: str) -> BlobStoreUnavailable:
    """The store error for a failed filesystem call: BlobStoreFull when out of space, else
    BlobStoreUnavailable (read-only, permission denied, I/O error: the folder cannot be used)."""
    if exc.errno in _FULL_ERRNOS:
        return BlobStoreFull(f"{what}: {exc}")
    return BlobStoreUnavailable(f"{what}: {exc}")


def check_older_than(older_than: datetime | None) -> None:
    """Raise ValueError for a naive cutoff: comparing it to storage timestamps would be a guess."""
    if older_than is not None and older_than.utcoffset() is None:
        raise ValueError("older_than must be timezone-aware")


def check_max_bytes(max_bytes: int | None) -> None:
    """Raise ValueError for a negative upload limit."""
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")


async def spool_hashed(
    chunks: AsyncIterable[bytes], sink: IO[bytes], *, max_bytes: int | None = None
) -> tuple[str, int]:
    """Write `chunks` to `sink` in a worker thread, returning (hex sha256, size).

    Raises BlobTooLarge as soon as more than `max_bytes` have arrived, without reading further; the
    caller owns `sink` and discards it.
    """
    check_max_bytes(max_bytes)
    digest = hashlib.sha256()
    size = 0
    pending = bytearray()

    def flush(data: bytes) -> None:
        digest.update(data)
        sink.write(data)

    async for chunk in chunks:
        size += len(chunk)
        if max_bytes is not None and size > max_bytes:
            raise BlobTooLarge(max_bytes)
        pending += chunk
        if len(pending) >= _SPOOL_BATCH_SIZE:
            data = bytes(pending)
            pending.clear()
            await anyio.to_thread.run_sync(flush, data)
    if pending:
        await anyio.to_thread.run_sync(flush, bytes(pending))
    return digest.hexdigest(), size


async def _single(data: bytes) -> AsyncIterator[bytes]:
    yield data


class BlobStore(abc.ABC):
    """Port for immutable, content-addressed blobs; the artifact service's only way to bytes.

    Every method that takes a key raises ValueError for a key this store could not have produced.
    A failure of the backend itself raises BlobStoreError: BlobStoreUnavailable when it cannot be
    reached or used (access denied, read-only, unreachable, timed out), BlobStoreFull when it has no
    space left. Their messages may name server paths and endpoints: for logs, not for clients.
    Putting bytes that are already stored is cheap and refreshes the blob's last-modified time, so a
    garbage collector with a grace period does not remove a blob a new version is about to name.
    """

    @abc.abstractmethod
    async def put_stream(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """Store the bytes of `chunks` under their content key and describe what was stored.

        Args:
            chunks: the body, consumed once; never held in memory whole by file-backed stores.
            max_bytes: if more bytes than this arrive, reading stops, nothing is left behind and
                BlobTooLarge is raised. None means no limit.
        """

    async def put_bytes(self, data: bytes) -> BlobInfo:
        """Store `data` under its content key."""
        return await self.put_stream(_single(data))

    @abc.abstractmethod
    async def open_range(
        self,
        key: str,
        *,
        start: int = 0,
        end: int | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> AsyncIterator[bytes]:
        """Check the blob exists, then return an iterator over its bytes `start`..`end` inclusive.

        Being a coroutine, it raises BlobNotFound when awaited, before any byte is produced, so
        a caller can still answer 404 instead of a broken 200:
        ``async for chunk in await store.open_range(key): ...``.

        Args:
            key: a key returned by a put.
            start: first byte offset (>= 0).
            end: last byte offset, inclusive as in an HTTP Range; None or past the end means up to
                the last byte. A start at or past the end yields nothing.
            chunk_size: the largest chunk the iterator yields.
        """

    async def read_bytes(self, key: str) -> bytes:
        """Return the whole blob; only for blobs known to be small."""
        return b"".join([chunk async for chunk in await self.open_range(key)])

    @abc.abstractmethod
    async def exists(self, key: str) -> bool:
        """Return whether a blob is stored under `key`."""

    @abc.abstractmethod
    async def size(self, key: str) -> int:
        """Return the blob's size in bytes; raise BlobNotFound if it is missing."""

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Remove the blob; a missing blob is not an error."""

    @abc.abstractmethod
    def list_keys(self, *, older_than: datetime | None = None) -> AsyncIterator[str]:
        """Yield every stored blob key, in no particular order.

        Args:
            older_than: a timezone-aware cutoff; if given, only blobs last modified before it are
                yielded (garbage collection leaves younger orphans alone as a grace period).
        """

    @abc.abstractmethod
    def prepare(self) -> None:
        """Create the local folders the store writes to; called once at startup (blocking).

        Raises BlobStoreUnavailable if they cannot be created; the store creates them again on
        first use, so a folder that becomes writable later needs no restart.
        """

    @abc.abstractmethod
    async def ping(self) -> None:
        """Raise BlobStoreUnavailable unless the store can be used (readiness probe).

        It exercises the write path (a probe file where uploads are written or staged), not
        only reachability, so a store that would refuse every upload is not ready.
        """

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release connections and other resources; the store is not used afterwards."""
