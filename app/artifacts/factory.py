"""Builds the configured BlobStore from settings, ready to use.

Called once per process (the app's lifespan, `agentd gc`). Besides picking the backend it creates
the folders the store writes to (a fresh data folder has neither the blob folder nor the S3 upload
spool), and warns when a PostgreSQL deployment (the multi-replica one) keeps blobs where only one
replica sees them.
"""

import logging

from app.artifacts.blobstore import (
    BlobStore,
    BlobStoreError,
    InMemoryBlobStore,
    LocalBlobStore,
    S3BlobStore,
)
from app.settings import Settings

logger = logging.getLogger("agentd.artifacts")

_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})


def create_blob_store(settings: Settings) -> BlobStore:
    """The blob store AGENTD_BLOB_STORE names (local folder by default), its folders created."""
    store = _build(settings)
    if _is_postgres(settings.resolved_database_url):
        # PostgreSQL is how agentd runs several replicas; blobs only one of them sees make every
        # other replica answer 503 for the artifacts it did not write.
        if settings.blob_store == "local":
            logger.warning(
                "AGENTD_BLOB_STORE=local with a PostgreSQL database: with more than one replica, "
                "every replica needs the same blob folder (a shared volume at AGENTD_BLOB_DIR) or "
                "AGENTD_BLOB_STORE=s3; otherwise a replica cannot read the blobs another one wrote."
            )
        elif settings.blob_store == "memory":
            logger.warning(
                "AGENTD_BLOB_STORE=memory with a PostgreSQL database: artifact bytes live in this "
                "process only, so other replicas cannot read them and a restart loses them while "
                "their versions stay in the database; use AGENTD_BLOB_STORE=s3 outside tests."
            )
    try:
        store.prepare()
    except BlobStoreError as exc:
        # Not fatal: the store creates its folders again on use, and /readyz answers 503 until
        # that works, so a volume mounted late or made writable later needs no restart.
        logger.warning("the blob store's folders could not be created: %s", exc)
    return store


def _build(settings: Settings) -> BlobStore:
    if settings.blob_store == "memory":
        return InMemoryBlobStore()
    if settings.blob_store == "s3":
        if not settings.s3_bucket:
            raise ValueError("AGENTD_BLOB_STORE=s3 needs AGENTD_S3_BUCKET.")
        return S3BlobStore(
            settings.s3_bucket,
            prefix=settings.s3_prefix,
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            force_path_style=settings.s3_force_path_style,
            connect_timeout=settings.s3_connect_timeout_seconds,
            read_timeout=settings.s3_read_timeout_seconds,
            max_attempts=settings.s3_max_attempts,
            spool_dir=settings.data_dir / "spool",
        )
    return LocalBlobStore(settings.resolved_blob_dir)


def _is_postgres(database_url: str) -> bool:
    # The URL's scheme without the driver ("postgresql+asyncpg" -> "postgresql").
    return database_url.partition(":")[0].partition("+")[0] in _POSTGRES_SCHEMES
