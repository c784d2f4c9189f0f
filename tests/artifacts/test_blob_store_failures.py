"""Blob store failures at the store and service level: a full disk, a folder that cannot be
written, an S3 endpoint that never answers, a spool folder that vanished (issue 14, 6d-6f).

The full disk is a real failing write: the store's temp file is opened on /dev/full, where every
write fails with ENOSPC, because a small filesystem (tmpfs) can only be mounted with privileges;
tests/faults/test_blob_faults.py mounts one over HTTP where it can.
"""

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import BinaryIO

import pytest
from google.genai import types

from app.artifacts.base import ArtifactScope
from app.artifacts.blobstore import (
    BlobStore,
    BlobStoreFull,
    BlobStoreUnavailable,
    LocalBlobStore,
    S3BlobStore,
)
from app.artifacts.in_memory import InMemoryArtifactService
from app.errors import AgentdError, ArtifactStorageFull, ArtifactStorageUnavailable
from app.sessions.in_memory import InMemorySessionService
from tests.artifacts.conftest import S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY, S3Server
from tests.faults.s3_gate import S3Gate

SCOPE = ArtifactScope("app", "u1", "s1")
DEV_FULL = Path("/dev/full")


class FullDiskStore(LocalBlobStore):
    """A local store whose uploads are written to /dev/full: every write fails with ENOSPC."""

    def _new_temp(self, prefix: str = "upload-") -> tuple[Path, BinaryIO]:
        path, sink = super()._new_temp(prefix)
        sink.close()  # the temp file stays (and must be cleaned up); its bytes go to /dev/full
        return path, DEV_FULL.open("wb")


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _service(store: BlobStore) -> InMemoryArtifactService:
    sessions = InMemorySessionService()
    await sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    return InMemoryArtifactService(session_service=sessions, blob_store=store)


def _assert_no_internals(problem: AgentdError, *hidden: str) -> None:
    body = json.dumps(problem.marshal())
    for text in hidden:
        assert text not in body


@pytest.fixture
def full_store(tmp_path: Path) -> FullDiskStore:
    """A FullDiskStore (fails loudly if the system has no /dev/full)."""
    assert DEV_FULL.exists(), "/dev/full is needed to fail a write with ENOSPC"
    return FullDiskStore(tmp_path / "blobs")


async def test_full_disk_fails_streamed_and_in_hand_puts_with_blob_store_full(
    full_store: FullDiskStore,
) -> None:
    with pytest.raises(BlobStoreFull):
        await full_store.put_stream(_chunks(b"x" * 4096, b"y" * (2 * 1024 * 1024)))
    with pytest.raises(BlobStoreFull):
        await full_store.put_bytes(b"small")
    with pytest.raises(BlobStoreFull):
        await full_store.ping()
    assert list((full_store.root / "tmp").iterdir()) == []  # no temp file left behind


async def test_full_disk_is_507_insufficient_storage_without_paths(
    full_store: FullDiskStore,
) -> None:
    artifacts = await _service(full_store)
    with pytest.raises(ArtifactStorageFull) as streamed:
        await artifacts.stage(SCOPE, filename="a.bin", chunks=_chunks(b"data"))
    with pytest.raises(ArtifactStorageFull) as in_hand:
        await artifacts.stage_part(SCOPE, filename="a.txt", artifact=types.Part(text="t"))
    for caught in (streamed, in_hand):
        assert caught.value.status == 507
        _assert_no_internals(caught.value, str(full_store.root), "Errno")


async def test_unusable_blob_folder_is_503_with_retry_after_and_no_paths(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("a folder cannot be made here")
    store = LocalBlobStore(blocker / "blobs")
    artifacts = await _service(store)
    failures = []
    for attempt in (
        artifacts.stage(SCOPE, filename="a.bin", chunks=_chunks(b"data")),
        artifacts.stage_part(SCOPE, filename="a.txt", artifact=types.Part(text="t")),
        artifacts.read_bytes("sha256/ab/cd/abcd" + "0" * 60),
        artifacts.ping(),
    ):
        with pytest.raises(ArtifactStorageUnavailable) as caught:
            await attempt
        failures.append(caught.value)
    for problem in failures:
        assert problem.status == 503
        assert problem.headers is not None
        assert int(problem.headers["Retry-After"]) > 0
        _assert_no_internals(problem, str(tmp_path), "Errno")


async def test_a_version_whose_blob_is_missing_is_503(tmp_path: Path) -> None:
    artifacts = await _service(LocalBlobStore(tmp_path / "blobs"))
    with pytest.raises(ArtifactStorageUnavailable):
        await artifacts.open("sha256/ab/cd/abcd" + "0" * 60)


@pytest.fixture
def stalled_s3() -> Iterator[S3Gate]:
    """An S3 endpoint that accepts connections and never answers."""
    gate = S3Gate(("127.0.0.1", 9))  # never forwarded to while stalled
    gate.stall()
    try:
        yield gate
    finally:
        gate.close()


async def test_s3_that_never_answers_fails_within_the_timeouts(
    stalled_s3: S3Gate, tmp_path: Path
) -> None:
    store = S3BlobStore(
        "bucket",
        endpoint_url=stalled_s3.url,
        region=S3_REGION,
        access_key_id=S3_ACCESS_KEY,
        secret_access_key=S3_SECRET_KEY,
        force_path_style=True,
        connect_timeout=0.2,
        read_timeout=0.2,
        max_attempts=2,
        spool_dir=tmp_path / "spool",
    )
    try:
        with pytest.raises(BlobStoreUnavailable):
            await store.put_bytes(b"data")
        with pytest.raises(BlobStoreUnavailable):
            await store.read_bytes("sha256/ab/cd/abcd" + "0" * 60)
        with pytest.raises(BlobStoreUnavailable):
            await store.ping()
    finally:
        await store.aclose()


async def test_s3_spool_folder_is_made_again_when_it_vanished(
    s3_server: S3Server, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    store = s3_server.store(prefix="vanishing-spool", spool_dir=spool)
    try:
        assert not spool.exists()
        await store.ping()  # the probe writes where uploads are staged
        spool.rmdir()
        info = await store.put_bytes(b"staged in a new spool")
        assert await store.read_bytes(info.key) == b"staged in a new spool"
        assert list(spool.iterdir()) == []
    finally:
        await store.aclose()
