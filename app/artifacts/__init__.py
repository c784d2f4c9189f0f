"""Versioned artifacts: content-addressed blob storage plus the version rows that name the blobs.

The `BaseArtifactService` port (`app.artifacts.base`) with its database and in-memory
implementations, as ADK exports its artifact services from `google.adk.artifacts`.
"""

from app.artifacts.base import ArtifactContent, ArtifactScope, BaseArtifactService
from app.artifacts.database import DatabaseArtifactService
from app.artifacts.gcs_artifact_service import GcsArtifactService
from app.artifacts.in_memory import InMemoryArtifactService

__all__ = [
    "ArtifactContent",
    "ArtifactScope",
    "BaseArtifactService",
    "DatabaseArtifactService",
    "GcsArtifactService",
    "InMemoryArtifactService",
]
