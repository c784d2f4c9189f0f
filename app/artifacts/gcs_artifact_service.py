"""ADK import path: `app.artifacts.gcs_artifact_service` (a name only: agentd has no GCS client).

Constructing `GcsArtifactService` raises `GoogleCloudNotSupported`, so ADK code that picks it
fails at start-up with a message saying what to use instead, not on its first artifact.
"""

from typing import Any

from app.artifacts.base import BaseArtifactService
from app.errors import GoogleCloudNotSupported


class GcsArtifactService(BaseArtifactService):
    """ADK's Google Cloud Storage artifact service; constructing it raises."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> "GcsArtifactService":
        """Refuse: agentd keeps artifact bytes in its own blob store."""
        raise GoogleCloudNotSupported(
            "GcsArtifactService",
            "FileArtifactService, InMemoryArtifactService or DatabaseArtifactService (the "
            "server keeps artifact bytes in a local folder or an S3-compatible bucket: "
            "AGENTD_BLOB_STORE=s3)",
        )


__all__ = ["GcsArtifactService"]
