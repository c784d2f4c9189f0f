"""Liveness, readiness and version probes."""

from fastapi import APIRouter, Request

from app import __version__
from app.api.json_body import JsonRoute
from app.api.schemas import HealthResponse, VersionResponse
from app.artifacts.base import BaseArtifactService
from app.errors import ServiceUnavailable
from app.sessions.base import BaseSessionService

router = APIRouter(route_class=JsonRoute, tags=["health"])

ADK_COMPATIBILITY = "2.13.0"


@router.get("/health", summary="Liveness probe")
async def health() -> HealthResponse:
    """Always ok while the process serves requests."""
    return HealthResponse(status="ok")


@router.get(
    "/readyz",
    summary="Readiness probe (database and blob store reachable)",
    responses={503: {"description": "A dependency is unreachable (service-unavailable)."}},
)
async def readyz(request: Request) -> HealthResponse:
    """Ready when the database answers and the blob store is reachable."""
    sessions: BaseSessionService = request.app.state.session_service
    artifacts: BaseArtifactService = request.app.state.artifact_service
    try:
        await sessions.ping()
    except Exception as exc:
        raise ServiceUnavailable("The database is unreachable.") from exc
    await artifacts.ping()  # ServiceUnavailable when the blob store is unreachable
    return HealthResponse(status="ready")


@router.get("/version", summary="Server version")
async def version() -> VersionResponse:
    """The agentd version and the ADK api_server version its wire format follows."""
    return VersionResponse(version=__version__, adk_compatibility=ADK_COMPATIBILITY)
