"""ADK import path: `app.artifacts.in_memory_artifact_service`."""

from app.artifacts.in_memory import InMemoryArtifactService

__all__ = ["InMemoryArtifactService"]
