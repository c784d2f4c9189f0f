"""`S3BlobStore`: the blob store port on any S3-compatible object store (AWS S3, MinIO, R2, ...).

boto3 is the client: it is the reference S3 implementation, and its transfer manager already does
multipart uploads with bounded memory, retries and aborting of failed uploads. Its calls block, so
each one runs in an anyio worker thread (anyio because Starlette runs on it and shares its thread
limiter); aioboto3 would add a second, less kept HTTP stack for no gain at our request rates.

An upload is spooled to a temp file on local disk while its sha256 is computed, because the object
name depends on the hash; the file is then sent with `upload_file`, which goes multipart above
`multipart_threshold` and reads the file part by part. S3 makes an object visible only once its
upload completes, so nothing partial is ever seen under a key. If the object already exists the
upload is skipped and the object is copied onto itself to refresh its LastModified (the garbage
collector's grace period); on a versioned bucket that copy leaves a noncurrent version, so expire
those with a lifecycle rule (blobs are immutable, versioning buys nothing here).

Every request is bounded: `connect_timeout` and `read_timeout` cap each wait on the socket and
`max_attempts` the tries, so an S3 that accepts connections but never answers costs a request at
most about attempts x (connect + read) seconds before it fails as BlobStoreUnavailable (a 503);
the readiness probe tries once. The spool folder is created at startup (`prepare`) and again when
it has gone missing, and the probe writes a spool file, since every upload starts there.
"""

import contextlib
import tempfile
from collections.abc import AsyncIterable, AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.to_thread
import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

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
from app.errors import BlobNotFound, BlobStoreError, BlobStoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

__all__ = ["S3BlobStore"]

_T = TypeVar("_T")

_MiB = 1024 * 1024
# CopyObject refuses sources above 5 GiB; such blobs are left untouched on a dedupe hit.
_MAX_COPY_BYTES = 5 * 1024 * _MiB
_CONTENT_TYPE = "application/octet-stream"
_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})


class _Missing(Exception):
    """The addressed object does not exist (S3 answered 404)."""


class S3BlobStore(BlobStore):
    """Blob store on an S3-compatible bucket; safe to share between any number of replicas."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
        *,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        force_path_style: bool = False,
        connect_timeout: float = 3.0,
        read_timeout: float = 10.0,
        max_attempts: int = 2,
        max_pool_connections: int = 10,
        multipart_threshold: int = 64 * _MiB,
        multipart_chunksize: int = 16 * _MiB,
        spool_dir: Path | None = None,
    ) -> None:
        """Create the client; no request is sent until the first call.

        Args:
            bucket: an existing bucket; the store never creates it.
            prefix: prepended to every object name (a trailing "/" is added), so the bucket can
                be shared with other data.
            endpoint_url: for S3-compatible services; None means AWS.
            region: None falls back to boto3's usual lookup (env, config file).
            access_key_id: with `secret_access_key` (and `session_token`); None uses boto3's
                credential chain (env, profile, instance role).
            force_path_style: address buckets as ``endpoint/bucket`` (MinIO and most
                self-hosted stores) instead of ``bucket.endpoint``.
            connect_timeout: seconds to wait for a connection to S3.
            read_timeout: seconds to wait for each read of an answer (not for a whole transfer).
            max_attempts: tries per request, the first included (retries back off with jitter).
            spool_dir: where uploads are staged before they are sent; None is the system temp
                dir. It needs room for the largest concurrent uploads.
        """
        self._bucket = bucket
        prefix = prefix.strip("/")
        self._prefix = f"{prefix}/" if prefix else ""
        self._spool_dir = spool_dir
        session = boto3.session.Session(
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            aws_session_token=session_token,
            region_name=region,
        )
        config = Config(
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=max_pool_connections,
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            s3={"addressing_style": "path" if force_path_style else "auto"},
            # Newer botocore adds CRC checksums to every request by default, which several
            # S3-compatible servers reject; send and check them only where S3 requires them.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        self._client: S3Client = session.client("s3", endpoint_url=endpoint_url, config=config)
        # A readiness probe answers soon rather than retrying: the next probe is the retry.
        self._probe_client: S3Client = session.client(
            "s3",
            endpoint_url=endpoint_url,
            config=config.merge(Config(retries={"mode": "standard", "total_max_attempts": 1})),
        )
        self._transfer = TransferConfig(
            multipart_threshold=multipart_threshold,
            multipart_chunksize=multipart_chunksize,
            max_concurrency=4,
        )

    @property
    def bucket(self) -> str:
        """The bucket that holds the blobs."""
        return self._bucket

    @property
    def prefix(self) -> str:
        """The object-name prefix, empty or ending with "/"."""
        return self._prefix

    async def put_stream(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """Spool `chunks` to disk while hashing, then upload unless the object already exists."""
        spool = await self._spool_call(self._new_spool)
        try:
            try:
                sha256, size = await spool_hashed(chunks, spool, max_bytes=max_bytes)
                await anyio.to_thread.run_sync(spool.flush)
            except OSError as exc:
                raise os_failure(exc, "writing to the upload spool failed") from exc
            key = content_key(sha256)
            name = self._object_name(key)
            if not await self._refresh_if_exists(name):
                await self._call(
                    lambda: self._client.upload_file(
                        spool.name,
                        self._bucket,
                        name,
                        ExtraArgs={"ContentType": _CONTENT_TYPE},
                        Config=self._transfer,
                    )
                )
        finally:
            # Shielded: a cancelled upload must still delete its spool file. Closing flushes what
            # is left; after a failed write that fails again, and the first error is the one.
            with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                await anyio.to_thread.run_sync(spool.close)
        return BlobInfo(key=key, sha256=sha256, size=size)

    async def open_range(
        self,
        key: str,
        *,
        start: int = 0,
        end: int | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> AsyncIterator[bytes]:
        """Check the object exists, then return an iterator over bytes `start`..`end` inclusive."""
        check_range(start, end, chunk_size)
        name = self._object_name(key)
        stop = range_stop(end, await self._size(name, key))
        return self._read_range(name, key, start, stop, chunk_size)

    async def exists(self, key: str) -> bool:
        """Return whether an object is stored under `key`."""
        name = self._object_name(key)
        try:
            await self._call(lambda: self._client.head_object(Bucket=self._bucket, Key=name))
        except _Missing:
            return False
        return True

    async def size(self, key: str) -> int:
        """Return the object's size in bytes."""
        return await self._size(self._object_name(key), key)

    async def delete(self, key: str) -> None:
        """Remove the object; S3 itself treats a missing one as deleted."""
        name = self._object_name(key)
        await self._call(lambda: self._client.delete_object(Bucket=self._bucket, Key=name))

    async def list_keys(self, *, older_than: datetime | None = None) -> AsyncIterator[str]:
        """Yield stored keys page by page, optionally only those modified before `older_than`."""
        check_older_than(older_than)
        paginator = self._client.get_paginator("list_objects_v2")
        pages = iter(paginator.paginate(Bucket=self._bucket, Prefix=f"{self._prefix}sha256/"))
        while (page := await self._call(lambda: next(pages, None))) is not None:
            for obj in page.get("Contents", []):
                key = obj["Key"][len(self._prefix) :]
                if not is_key(key):  # a foreign object under our prefix
                    continue
                if older_than is not None and obj["LastModified"] >= older_than:
                    continue
                yield key

    def prepare(self) -> None:
        """Create the spool folder uploads are staged in."""
        if self._spool_dir is not None:
            try:
                self._spool_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise os_failure(exc, "creating the upload spool folder failed") from exc

    async def ping(self) -> None:
        """Raise BlobStoreUnavailable unless a spool file can be written and the bucket answers
        a HEAD request (one try, bounded by the timeouts)."""
        await self._spool_call(self._probe_spool)
        try:
            await self._call(lambda: self._probe_client.head_bucket(Bucket=self._bucket))
        except (BlobStoreError, _Missing) as exc:
            raise BlobStoreUnavailable(f"bucket {self._bucket!r} is not usable: {exc}") from exc

    async def aclose(self) -> None:
        """Close the clients' connection pools."""
        await anyio.to_thread.run_sync(self._client.close)
        await anyio.to_thread.run_sync(self._probe_client.close)

    def _object_name(self, key: str) -> str:
        return f"{self._prefix}{check_key(key)}"

    def _new_spool(self, prefix: str = "agentd-upload-") -> "tempfile._TemporaryFileWrapper[bytes]":
        # Deleted on close, including when the upload fails or is cancelled.
        try:
            return tempfile.NamedTemporaryFile(dir=self._spool_dir, prefix=prefix)
        except FileNotFoundError:
            if self._spool_dir is None:
                raise
            # Removed while running (a temp cleaner, an emptied volume): make it again.
            self._spool_dir.mkdir(parents=True, exist_ok=True)
            return tempfile.NamedTemporaryFile(dir=self._spool_dir, prefix=prefix)

    def _probe_spool(self) -> None:
        with self._new_spool(prefix="agentd-readyz-") as probe:
            probe.write(b"readyz")
            probe.flush()

    async def _spool_call(self, func: Callable[[], _T]) -> _T:
        """Run a blocking spool-folder call in a worker thread; OS failures become store errors."""
        try:
            return await anyio.to_thread.run_sync(func)
        except OSError as exc:
            raise os_failure(exc, "the upload spool folder cannot be used") from exc

    async def _size(self, name: str, key: str) -> int:
        try:
            head = await self._call(lambda: self._client.head_object(Bucket=self._bucket, Key=name))
        except _Missing:
            raise BlobNotFound(key) from None
        return head["ContentLength"]

    async def _refresh_if_exists(self, name: str) -> bool:
        """Return whether the object exists, refreshing its LastModified if it does."""
        try:
            head = await self._call(lambda: self._client.head_object(Bucket=self._bucket, Key=name))
        except _Missing:
            return False
        if head["ContentLength"] <= _MAX_COPY_BYTES:
            try:
                await self._call(
                    lambda: self._client.copy_object(
                        Bucket=self._bucket,
                        Key=name,
                        CopySource={"Bucket": self._bucket, "Key": name},
                        MetadataDirective="REPLACE",
                        ContentType=_CONTENT_TYPE,
                    )
                )
            except _Missing:  # deleted since the HEAD: store it again
                return False
        return True

    async def _read_range(
        self, name: str, key: str, start: int, stop: int, chunk_size: int
    ) -> AsyncIterator[bytes]:
        if start >= stop:
            return
        try:
            response = await self._call(
                lambda: self._client.get_object(
                    Bucket=self._bucket, Key=name, Range=f"bytes={start}-{stop - 1}"
                )
            )
        except _Missing:  # deleted between the existence check and the first read
            raise BlobNotFound(key) from None
        body = response["Body"]
        try:
            while chunk := await self._call(lambda: body.read(chunk_size)):
                yield chunk
        finally:
            body.close()

    async def _call(self, func: Callable[[], _T]) -> _T:
        """Run a blocking boto3 call in a worker thread, translating its errors."""
        try:
            return await anyio.to_thread.run_sync(func)
        except ClientError as exc:
            # HEAD answers carry no body, so a missing object there is just "404".
            if exc.response.get("Error", {}).get("Code") in _MISSING_CODES:
                raise _Missing from exc
            raise BlobStoreError(f"S3 request failed: {exc}") from exc
        except BotoCoreError as exc:  # connection, timeout, credentials
            raise BlobStoreUnavailable(f"S3 is not reachable: {exc}") from exc
        except Boto3Error as exc:  # the transfer manager wraps failed uploads in its own errors
            raise BlobStoreError(f"S3 upload failed: {exc}") from exc
