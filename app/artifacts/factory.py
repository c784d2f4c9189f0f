"""Builds the configured BlobStore from settings."""

from app.artifacts.blobstore import BlobStore, InMemoryBlobStore, LocalBlobStore, S3BlobStore
from app.settings import Settings


def create_blob_store(settings: Settings) -> BlobStore:
    """The blob store AGENTD_BLOB_STORE names (local folder by default)."""
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
            spool_dir=settings.data_dir / "spool",
        )
    return LocalBlobStore(settings.resolved_blob_dir)
