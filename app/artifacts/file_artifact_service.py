"""ADK import path: `app.artifacts.file_artifact_service`."""

from app.artifacts.file import FileArtifactService

__all__ = ["FileArtifactService"]
