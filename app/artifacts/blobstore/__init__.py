"""Blob storage for artifact bytes: the `BlobStore` port and its local, S3 and in-memory stores."""

from app.artifacts.blobstore.base import BlobInfo, BlobStore
from app.artifacts.blobstore.in_memory import InMemoryBlobStore
from app.artifacts.blobstore.local import LocalBlobStore
from app.artifacts.blobstore.s3 import S3BlobStore
from app.errors import (
    BlobNotFound,
    BlobStoreError,
    BlobStoreFull,
    BlobStoreUnavailable,
    BlobTooLarge,
)

__all__ = [  # noqa: RUF022 - the port first, then its stores
    "BlobInfo",
    "BlobStore",
    "BlobNotFound",
    "BlobStoreError",
    "BlobStoreFull",
    "BlobStoreUnavailable",
    "BlobTooLarge",
    "InMemoryBlobStore",
    "LocalBlobStore",
    "S3BlobStore",
]
