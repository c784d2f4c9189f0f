"""The services one agentd process runs on, built from settings: shared by the API server's
lifespan and by `agentd worker`, which runs invocations without serving HTTP.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from app.artifacts.database import DatabaseArtifactService
from app.artifacts.factory import create_blob_store
from app.db import failpoints
from app.db.engine import create_db_engine
from app.invocations.manager import InvocationManager
from app.invocations.registry import AppRegistry
from app.invocations.store import InvocationStore
from app.memory.database import DatabaseMemoryService
from app.sessions.database import DatabaseSessionService
from app.sessions.storage import StorageLimits
from app.settings import Settings


@dataclass(frozen=True)
class Services:
    """What routers and workers use; all of it lives as long as the process serves."""

    db_engine: AsyncEngine
    session_service: DatabaseSessionService
    artifact_service: DatabaseArtifactService
    memory_service: DatabaseMemoryService
    invocation_manager: InvocationManager


@asynccontextmanager
async def running(settings: Settings, registry: AppRegistry) -> AsyncIterator[Services]:
    """Build the services, start the invocation manager (it claims work if this process runs
    invocations); on exit shut it down gracefully (see `InvocationManager.shutdown`), then close
    everything."""
    failpoints.configure(settings.failpoints)
    db_engine = create_db_engine(
        settings.resolved_database_url,
        pool_size=settings.db_pool_size,
        echo=settings.db_echo,
        sqlite_fast_path=settings.sqlite_fast_path,
    )
    session_service = DatabaseSessionService(
        db_engine,
        max_session_events=settings.max_session_events,
        history_cache_events=settings.history_cache_events,
        history_hot_sessions=settings.history_hot_sessions,
        limits=StorageLimits(
            max_event_bytes=settings.max_event_bytes, max_state_bytes=settings.max_state_bytes
        ),
    )
    blob_store = create_blob_store(settings)
    artifact_service = DatabaseArtifactService(
        db_engine,
        blob_store,
        max_artifact_bytes=settings.max_artifact_bytes,
        session_service=session_service,
    )
    memory_service = DatabaseMemoryService(db_engine)
    manager = InvocationManager(
        store=InvocationStore(db_engine),
        registry=registry,
        session_service=session_service,
        artifact_service=artifact_service,
        memory_service=memory_service,
        settings=settings,
    )
    try:
        await manager.startup()
        yield Services(db_engine, session_service, artifact_service, memory_service, manager)
    finally:
        await manager.shutdown()
        await session_service.close()
        await blob_store.aclose()
        await db_engine.dispose()
