"""The `BlobStore` contract: every backend (in-memory, local folder, S3 via moto) must pass it."""

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from app.artifacts.blobstore import (
    BlobNotFound,
    BlobStore,
    BlobStoreUnavailable,
    BlobTooLarge,
    LocalBlobStore,
)

from .conftest import S3Server

pytestmark = pytest.mark.asyncio

MiB = 1024 * 1024
DATA = bytes(range(256)) * 40 + b"tail"  # 10244 bytes, every byte value, not chunk-aligned


async def stream(*chunks: bytes) -> AsyncIterator[bytes]:
    """Yield `chunks` as an upload body would arrive."""
    for chunk in chunks:
        yield chunk


async def collect(store: BlobStore) -> list[str]:
    """Return every key the store lists."""
    return [key async for key in store.list_keys()]


async def read_range(store: BlobStore, key: str, *, start: int, end: int | None = None) -> bytes:
    """Read a range through `open_range` and join it."""
    return b"".join([chunk async for chunk in await store.open_range(key, start=start, end=end)])


async def cancel_put_midway(store: BlobStore) -> None:
    """Start a put whose body stalls after one chunk, then cancel it."""
    stalled = anyio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield DATA
        stalled.set()
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(store.put_stream, body())
        await stalled.wait()
        tasks.cancel_scope.cancel()


async def test_put_bytes_then_read_bytes_roundtrips(blob_store: BlobStore) -> None:
    info = await blob_store.put_bytes(DATA)

    assert await blob_store.read_bytes(info.key) == DATA


async def test_put_reports_sha256_size_and_content_key(blob_store: BlobStore) -> None:
    digest = hashlib.sha256(DATA).hexdigest()

    info = await blob_store.put_bytes(DATA)

    assert info.sha256 == digest
    assert info.size == len(DATA)
    assert info.key == f"sha256/{digest[:2]}/{digest[2:4]}/{digest}"
    assert await blob_store.size(info.key) == len(DATA)
    assert await blob_store.exists(info.key)


async def test_put_of_identical_bytes_stores_one_blob(blob_store: BlobStore) -> None:
    first = await blob_store.put_bytes(DATA)
    second = await blob_store.put_stream(stream(DATA[:100], DATA[100:]))

    assert second == first
    assert await collect(blob_store) == [first.key]
    assert await blob_store.read_bytes(first.key) == DATA


async def test_put_of_different_bytes_stores_separate_blobs(blob_store: BlobStore) -> None:
    a = await blob_store.put_bytes(b"a")
    b = await blob_store.put_bytes(b"b")

    assert a.key != b.key
    assert sorted(await collect(blob_store)) == sorted([a.key, b.key])


async def test_put_stream_of_many_chunks_stores_their_concatenation(blob_store: BlobStore) -> None:
    # Over 6 MiB in uneven chunks: crosses the spool batch size and, on S3, the multipart threshold.
    chunks = [bytes([i % 251]) * (64 * 1024 + i) for i in range(100)]
    body = b"".join(chunks)

    info = await blob_store.put_stream(stream(*chunks))

    assert info.size == len(body)
    assert info.sha256 == hashlib.sha256(body).hexdigest()
    assert await blob_store.read_bytes(info.key) == body


async def test_put_of_empty_stream_stores_empty_blob(blob_store: BlobStore) -> None:
    info = await blob_store.put_stream(stream())

    assert info.size == 0
    assert info.sha256 == hashlib.sha256(b"").hexdigest()
    assert await blob_store.read_bytes(info.key) == b""


async def test_put_over_limit_stores_nothing(blob_store: BlobStore) -> None:
    with pytest.raises(BlobTooLarge) as excinfo:
        await blob_store.put_stream(stream(DATA[:5000], DATA[5000:]), max_bytes=len(DATA) - 1)

    assert excinfo.value.limit == len(DATA) - 1
    assert await collect(blob_store) == []


async def test_put_over_limit_stops_reading_the_stream(blob_store: BlobStore) -> None:
    consumed = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal consumed
        while True:
            consumed += 1
            yield b"x" * 1000

    with pytest.raises(BlobTooLarge):
        await blob_store.put_stream(endless(), max_bytes=2500)

    assert consumed == 3


async def test_cancelled_put_stores_nothing(blob_store: BlobStore) -> None:
    await cancel_put_midway(blob_store)

    assert await collect(blob_store) == []


async def test_put_of_exactly_max_bytes_succeeds(blob_store: BlobStore) -> None:
    info = await blob_store.put_stream(stream(DATA), max_bytes=len(DATA))

    assert info.size == len(DATA)


async def test_open_range_from_start_offset_reads_to_the_end(blob_store: BlobStore) -> None:
    info = await blob_store.put_bytes(DATA)

    assert await read_range(blob_store, info.key, start=1000) == DATA[1000:]


async def test_open_range_end_is_inclusive(blob_store: BlobStore) -> None:
    info = await blob_store.put_bytes(DATA)

    assert await read_range(blob_store, info.key, start=10, end=19) == DATA[10:20]


async def test_open_range_reads_the_last_byte(blob_store: BlobStore) -> None:
    info = await blob_store.put_bytes(DATA)
    last = len(DATA) - 1

    assert await read_range(blob_store, info.key, start=last, end=last) == DATA[-1:]


async def test_open_range_clamps_end_past_the_blob(blob_store: BlobStore) -> None:
    info = await blob_store.put_bytes(DATA)

    assert await read_range(blob_store, info.key, start=5, end=10**9) == DATA[5:]


async def test_open_range_starting_past_the_end_yields_nothing(blob_store: BlobStore) -> None:
    info = await blob_store.put_bytes(DATA)

    assert await read_range(blob_store, info.key, start=len(DATA)) == b""


async def test_open_range_yields_chunks_no_larger_than_chunk_size(blob_store: BlobStore) -> None:
    info = await blob_store.put_bytes(DATA)

    chunks = [c async for c in await blob_store.open_range(info.key, start=3, chunk_size=1000)]

    assert all(0 < len(c) <= 1000 for c in chunks)
    assert b"".join(chunks) == DATA[3:]


@pytest.mark.parametrize(("start", "end"), [(-1, None), (10, 9)])
async def test_open_range_rejects_invalid_range(
    blob_store: BlobStore, start: int, end: int | None
) -> None:
    info = await blob_store.put_bytes(DATA)

    with pytest.raises(ValueError, match="range"):
        await blob_store.open_range(info.key, start=start, end=end)


async def test_open_range_of_missing_key_raises_before_streaming(blob_store: BlobStore) -> None:
    key = (await blob_store.put_bytes(DATA)).key
    await blob_store.delete(key)

    with pytest.raises(BlobNotFound):
        await blob_store.open_range(key)


async def test_read_and_size_of_missing_key_raise_not_found(blob_store: BlobStore) -> None:
    key = (await blob_store.put_bytes(DATA)).key
    await blob_store.delete(key)

    with pytest.raises(BlobNotFound):
        await blob_store.read_bytes(key)
    with pytest.raises(BlobNotFound):
        await blob_store.size(key)
    assert not await blob_store.exists(key)


async def test_delete_is_idempotent(blob_store: BlobStore) -> None:
    key = (await blob_store.put_bytes(DATA)).key

    await blob_store.delete(key)
    await blob_store.delete(key)

    assert await collect(blob_store) == []


async def test_put_after_delete_stores_the_blob_again(blob_store: BlobStore) -> None:
    key = (await blob_store.put_bytes(DATA)).key
    await blob_store.delete(key)

    await blob_store.put_bytes(DATA)

    assert await blob_store.read_bytes(key) == DATA


async def test_list_keys_filters_by_last_modified(blob_store: BlobStore) -> None:
    key = (await blob_store.put_bytes(DATA)).key
    now = datetime.now(UTC)

    older_than_future = [k async for k in blob_store.list_keys(older_than=now + timedelta(hours=1))]
    older_than_past = [k async for k in blob_store.list_keys(older_than=now - timedelta(hours=1))]

    assert older_than_future == [key]
    assert older_than_past == []


async def test_list_keys_rejects_naive_cutoff(blob_store: BlobStore) -> None:
    with pytest.raises(ValueError, match="timezone"):
        [k async for k in blob_store.list_keys(older_than=datetime(2020, 1, 1))]


INVALID_KEYS = [
    "../etc/passwd",
    "abc",
    "",
    "sha256/../../../etc/passwd",
    "sha256/ab/cd/" + "ab" + "0" * 62,  # fan-out does not match the digest
    "sha256/AB/CD/ABCD" + "0" * 60,  # upper case
    "sha256/ab/cd/abcd" + "0" * 60 + "/x",
    "/sha256/ab/cd/abcd" + "0" * 60,
]
KEY_OPERATIONS: dict[str, Callable[[BlobStore, str], Awaitable[object]]] = {
    "read_bytes": lambda s, k: s.read_bytes(k),
    "open_range": lambda s, k: s.open_range(k),
    "exists": lambda s, k: s.exists(k),
    "size": lambda s, k: s.size(k),
    "delete": lambda s, k: s.delete(k),
}


@pytest.mark.parametrize("key", INVALID_KEYS)
@pytest.mark.parametrize("operation", list(KEY_OPERATIONS))
async def test_invalid_key_is_rejected(blob_store: BlobStore, operation: str, key: str) -> None:
    with pytest.raises(ValueError, match="not a blob key"):
        await KEY_OPERATIONS[operation](blob_store, key)


async def test_ping_succeeds_on_a_usable_store(blob_store: BlobStore) -> None:
    await blob_store.ping()


# Backend-specific guarantees that the shared contract cannot observe.


async def test_local_failed_put_leaves_no_temp_file(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)

    with pytest.raises(BlobTooLarge):
        await store.put_stream(stream(DATA), max_bytes=10)
    await cancel_put_midway(store)

    assert list(tmp_path.rglob("*.part")) == []
    assert (tmp_path / "tmp").is_dir()


async def test_local_ping_fails_when_root_is_not_a_directory(tmp_path: Path) -> None:
    root = tmp_path / "file"
    root.write_bytes(b"")

    with pytest.raises(BlobStoreUnavailable):
        await LocalBlobStore(root).ping()


async def test_local_store_is_created_lazily(tmp_path: Path) -> None:
    root = tmp_path / "not" / "yet"
    store = LocalBlobStore(root)

    assert await collect(store) == []
    info = await store.put_bytes(DATA)

    assert (root / info.key).read_bytes() == DATA


async def test_s3_put_leaves_no_spool_file_whatever_the_outcome(
    s3_server: S3Server, tmp_path: Path
) -> None:
    store = s3_server.store(prefix="spool-check", spool_dir=tmp_path)
    try:
        await store.put_bytes(DATA)
        with pytest.raises(BlobTooLarge):
            await store.put_stream(stream(DATA), max_bytes=10)
        await cancel_put_midway(store)
    finally:
        await store.aclose()

    assert list(tmp_path.iterdir()) == []


async def test_s3_ping_fails_for_a_missing_bucket(s3_server: S3Server, tmp_path: Path) -> None:
    store = s3_server.store(prefix="", spool_dir=tmp_path, bucket="no-such-bucket")
    try:
        with pytest.raises(BlobStoreUnavailable):
            await store.ping()
    finally:
        await store.aclose()
