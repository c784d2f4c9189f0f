"""ADK import path: `from app.artifacts.base_artifact_service import BaseArtifactService`."""

from app.artifacts.base import BaseArtifactService

__all__ = ["BaseArtifactService"]
