"""Engine fixtures: real database-backed services (SQLite and PostgreSQL) and a Runner factory."""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.agents.base_agent import BaseAgent
from app.artifacts.blobstore import LocalBlobStore
from app.artifacts.service import ArtifactService
from app.invocations.runner import Runner
from app.memory.database import DatabaseMemoryService
from app.plugins import BasePlugin
from app.sessions.database import DatabaseSessionService


@dataclass
class Services:
    """The services a Runner needs, on one real database."""

    sessions: DatabaseSessionService
    artifacts: ArtifactService
    memory: DatabaseMemoryService

    def runner(
        self, agent: BaseAgent, *, app_name: str = "app", plugins: list[BasePlugin] | None = None
    ) -> Runner:
        """A Runner for `agent` on these services."""
        return Runner(
            app_name=app_name,
            agent=agent,
            session_service=self.sessions,
            artifact_service=self.artifacts,
            memory_service=self.memory,
            plugins=plugins,
        )


@pytest.fixture
async def services(db_engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Services]:
    """Database session, artifact and memory services (SQLite and PostgreSQL runs)."""
    blobs = LocalBlobStore(tmp_path / "blobs")
    yield Services(
        sessions=DatabaseSessionService(db_engine),
        artifacts=ArtifactService(db_engine, blobs, max_artifact_bytes=1024 * 1024),
        memory=DatabaseMemoryService(db_engine),
    )
    await blobs.aclose()
