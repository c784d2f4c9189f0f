"""`LocalBlobStore`: the blob store port on a local folder (the embedded default, `./data/blobs`).

Layout under the root: ``sha256/ab/cd/<hex>`` holds finished blobs, ``tmp/`` holds uploads in
progress. An upload is written to a temp file in ``tmp/`` (same filesystem), fsynced and then
renamed over its final name with `os.replace`, so a reader never sees a partial blob and a crash
leaves at most a stray temp file. Blocking file calls run in anyio worker threads, one chunk at a
time; anyio rather than asyncio.to_thread because Starlette runs on anyio and shares its thread
limiter.

`prepare()` creates ``tmp/`` and ``sha256/`` at startup, and every write creates the folders it
needs again, so a folder that was missing, read-only or full works as soon as it is fixed, without
a restart. Every failing filesystem call becomes BlobStoreUnavailable (BlobStoreFull when out of
space) carrying the OS error and path for the log; the artifact service shows clients neither.
"""

import hashlib
import logging
import os
import tempfile
from collections.abc import AsyncIterable, AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, ParamSpec, TypeVar

import anyio
import anyio.to_thread

from app.artifacts.blobstore.base import (
    DEFAULT_CHUNK_SIZE,
    BlobInfo,
    BlobStore,
    check_key,
    check_older_than,
    check_range,
    content_key,
    is_key,
    os_failure,
    range_stop,
    spool_hashed,
)
from app.errors import BlobNotFound, BlobStoreError

logger = logging.getLogger("agentd.artifacts")

__all__ = ["LocalBlobStore"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


class LocalBlobStore(BlobStore):
    """Blob store on a local directory; one replica only unless the folder is shared storage."""

    def __init__(self, root: Path) -> None:
        self._root = Path(root).absolute()
        self._tmp = self._root / "tmp"
        self._blobs = self._root / "sha256"

    @property
    def root(self) -> Path:
        """The directory that holds the blobs."""
        return self._root

    async def put_stream(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """Stream `chunks` to a temp file, then move it under its content key."""
        tmp_path, sink = await _run(self._new_temp)
        try:
            try:
                with sink:
                    sha256, size = await spool_hashed(chunks, sink, max_bytes=max_bytes)
                    await _run(_fsync_file, sink)
            except OSError as exc:  # spool_hashed writes in its own worker thread; close flushes
                raise os_failure(exc, "writing to the blob folder failed") from exc
            key = content_key(sha256)
            await _run(self._commit, tmp_path, self._path(key))
        except BaseException:
            # Shielded: the upload may have been cancelled, and the temp file must still go. If
            # the folder refuses that too, the stray file is only logged: the upload's own error
            # is what the caller needs.
            with anyio.CancelScope(shield=True):
                try:
                    await _run(_unlink, tmp_path)
                except BlobStoreError as cleanup:
                    logger.warning("leaving a temp file behind: %s", cleanup)
            raise
        return BlobInfo(key=key, sha256=sha256, size=size)

    async def put_bytes(self, data: bytes) -> BlobInfo:
        """Bytes already in hand (a tool's artifact): hash, check and write in one thread hop."""
        return await _run(self._put_bytes, data)

    def _put_bytes(self, data: bytes) -> BlobInfo:
        sha256 = hashlib.sha256(data).hexdigest()
        key = content_key(sha256)
        final = self._path(key)
        try:
            os.utime(final)  # already stored (common: same bytes again); restart the gc grace
        except FileNotFoundError:
            tmp_path, sink = self._new_temp()
            try:
                with sink:
                    sink.write(data)
                    _fsync_file(sink)
                self._commit(tmp_path, final)
            except BaseException:
                _unlink(tmp_path)
                raise
        return BlobInfo(key=key, sha256=sha256, size=len(data))

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
        path = self._path(key)
        stop = range_stop(end, await self._size(path, key))
        return _read_range(path, key, start, stop, chunk_size)

    async def read_bytes(self, key: str) -> bytes:
        """The whole (small) blob in one thread hop, not one per open/seek/read."""
        data = await _run(_read_or_none, self._path(key))
        if data is None:
            raise BlobNotFound(key)
        return data

    async def exists(self, key: str) -> bool:
        """Return whether a blob is stored under `key`."""
        return await _run(self._path(key).is_file)

    async def size(self, key: str) -> int:
        """Return the blob's size in bytes."""
        return await self._size(self._path(key), key)

    async def delete(self, key: str) -> None:
        """Remove the blob if present."""
        await _run(_unlink, self._path(key))

    async def list_keys(self, *, older_than: datetime | None = None) -> AsyncIterator[str]:
        """Yield stored keys, optionally only those last modified before `older_than`."""
        check_older_than(older_than)
        cutoff = None if older_than is None else older_than.timestamp()
        blobs_dir = self._blobs
        # One worker-thread hop per first-level fan-out directory keeps memory bounded by
        # 1/256 of the store instead of materialising every key at once.
        for first in await _run(_subdirs, blobs_dir):
            for key in await _run(_scan_fanout, blobs_dir / first, cutoff):
                yield key

    def prepare(self) -> None:
        """Create the root with its ``tmp/`` and ``sha256/`` folders."""
        try:
            self._tmp.mkdir(parents=True, exist_ok=True)
            self._blobs.mkdir(exist_ok=True)
        except OSError as exc:
            raise os_failure(exc, "creating the blob folder failed") from exc

    async def ping(self) -> None:
        """Raise BlobStoreUnavailable unless a probe file can be written where uploads go."""
        await _run(self._probe_write)

    async def aclose(self) -> None:
        """Nothing to release: every call opens and closes its own files."""

    def _path(self, key: str) -> Path:
        # check_key admits only sha256/<hex2>/<hex2>/<hex64>, so the path cannot leave the root.
        return self._root / check_key(key)

    async def _size(self, path: Path, key: str) -> int:
        size = await _run(_file_size, path)
        if size is None:
            raise BlobNotFound(key)
        return size

    def _new_temp(self, prefix: str = "upload-") -> tuple[Path, BinaryIO]:
        self._tmp.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self._tmp, prefix=prefix, suffix=".part")
        return Path(name), open(fd, "wb")  # closed by the caller

    def _commit(self, tmp_path: Path, final: Path) -> None:
        try:
            # Already stored: refresh mtime so garbage collection's grace period restarts.
            os.utime(final)
        except FileNotFoundError:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_path, final)
            _fsync_dir(final.parent)
        else:
            tmp_path.unlink()

    def _probe_write(self) -> None:
        # The start of every upload (a temp file in tmp/, written and synced), then the place it
        # is renamed into: what a read-only, full or vanished folder refuses.
        tmp_path, sink = self._new_temp(prefix="readyz-")
        try:
            with sink:
                sink.write(b"readyz")
                _fsync_file(sink)
        finally:
            tmp_path.unlink(missing_ok=True)
        self._blobs.mkdir(exist_ok=True)
        if not os.access(self._blobs, os.W_OK | os.X_OK):
            raise PermissionError(f"no write access to {self._blobs}")


async def _run(func: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Run a blocking filesystem call in a worker thread; OS failures become BlobStoreError."""

    def call() -> _T:
        return func(*args, **kwargs)

    try:
        return await anyio.to_thread.run_sync(call)
    except OSError as exc:
        raise os_failure(exc, "blob folder operation failed") from exc


async def _read_range(
    path: Path, key: str, start: int, stop: int, chunk_size: int
) -> AsyncIterator[bytes]:
    if start >= stop:
        return
    source = await _run(_open_or_none, path)
    if source is None:  # deleted between the existence check and the first read
        raise BlobNotFound(key)
    try:
        await _run(source.seek, start)
        remaining = stop - start
        while remaining > 0:
            chunk = await _run(source.read, min(chunk_size, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        source.close()


def _fsync_file(file: BinaryIO) -> None:
    file.flush()
    os.fsync(file.fileno())


def _fsync_dir(path: Path) -> None:
    # Makes the rename itself durable, not only the file's contents.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _open_or_none(path: Path) -> BinaryIO | None:
    try:
        return path.open("rb")
    except FileNotFoundError:
        return None


def _file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def _subdirs(path: Path) -> list[str]:
    try:
        with os.scandir(path) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []


def _scan_fanout(first: Path, cutoff: float | None) -> list[str]:
    keys: list[str] = []
    for second in _subdirs(first):
        try:
            with os.scandir(first / second) as it:
                entries = list(it)
        except FileNotFoundError:
            continue
        for entry in entries:
            key = f"sha256/{first.name}/{second}/{entry.name}"
            if not is_key(key) or not entry.is_file(follow_symlinks=False):
                continue
            if cutoff is not None:
                try:
                    modified = entry.stat(follow_symlinks=False).st_mtime
                except FileNotFoundError:  # deleted while listing
                    continue
                if modified >= cutoff:
                    continue
            keys.append(key)
    return keys
