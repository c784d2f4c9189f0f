"""Versioned artifacts: content-addressed blob storage plus the version rows that name the blobs.

The `BaseArtifactService` port (`app.artifacts.base`) with its database, in-memory and file
implementations, as ADK exports its artifact services from `google.adk.artifacts` (and ADK's
`GcsArtifactService`, which agentd names but does not implement).
"""

from app.artifacts.base import ArtifactContent, ArtifactScope, BaseArtifactService
from app.artifacts.database import DatabaseArtifactService
from app.artifacts.file import FileArtifactService
from app.artifacts.gcs_artifact_service import GcsArtifactService
from app.artifacts.in_memory import InMemoryArtifactService

__all__ = [
    "ArtifactContent",
    "ArtifactScope",
    "BaseArtifactService",
    "DatabaseArtifactService",
    "FileArtifactService",
    "GcsArtifactService",
    "InMemoryArtifactService",
]
