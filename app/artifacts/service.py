"""The names artifact code imported before the port was split out (tests and bench still do).

`ArtifactService` is the database implementation; new code types against `BaseArtifactService`
(`app.artifacts.base`) and builds `DatabaseArtifactService` or `InMemoryArtifactService`.
"""

from app.artifacts.base import (
    DEFAULT_MIME_TYPE,
    ArtifactContent,
    ArtifactScope,
    BaseArtifactService,
    part_bytes,
)
from app.artifacts.database import DatabaseArtifactService

ArtifactService = DatabaseArtifactService

__all__ = [
    "DEFAULT_MIME_TYPE",
    "ArtifactContent",
    "ArtifactScope",
    "ArtifactService",
    "BaseArtifactService",
    "part_bytes",
]
