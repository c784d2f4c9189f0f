"""Liveness, readiness and version probes."""

import platform

from fastapi import APIRouter, Request

from app import __version__
from app.api.deps import SettingsDep
from app.api.json_body import JsonRoute
from app.api.schemas import HealthResponse, VersionResponse
from app.artifacts.base import BaseArtifactService
from app.errors import DatabaseUnavailable
from app.sessions.base import BaseSessionService

router = APIRouter(route_class=JsonRoute, tags=["health"])

ADK_COMPATIBILITY = "2.13.0"


@router.get("/health", summary="Liveness probe", response_model_exclude_none=True)
async def health(settings: SettingsDep) -> HealthResponse:
    """Always ok while the process serves requests; names the blob store backend."""
    return HealthResponse(status="ok", blob_store=settings.blob_store)


@router.get(
    "/readyz",
    summary="Readiness probe (database answers, blob store writable)",
    response_model_exclude_none=True,
    responses={
        503: {
            "description": "A dependency cannot be used (database-unavailable, "
            "blob-store-unavailable); see Retry-After."
        }
    },
)
async def readyz(request: Request) -> HealthResponse:
    """Ready when the database answers and the blob store takes a probe write."""
    sessions: BaseSessionService = request.app.state.session_service
    artifacts: BaseArtifactService = request.app.state.artifact_service
    try:
        await sessions.ping()
    except Exception as exc:  # a probe reports any failure as "not ready", whatever it was
        raise DatabaseUnavailable("The database does not answer.") from exc
    await artifacts.ping()  # blob-store-unavailable when the probe write or HEAD fails
    return HealthResponse(status="ready")


@router.get("/version", summary="Server version")
async def version() -> VersionResponse:
    """agentd's version, the server's Python (ADK's keys), and the ADK api_server version
    agentd's wire format follows."""
    return VersionResponse(
        version=__version__,
        language_version=platform.python_version(),
        adk_compatibility=ADK_COMPATIBILITY,
    )
