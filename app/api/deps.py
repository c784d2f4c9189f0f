"""Request-scoped dependencies as `Annotated` aliases, so routes declare what they need by type."""

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from app.artifacts.base import BaseArtifactService
from app.invocations.manager import InvocationManager
from app.invocations.registry import AppInfo, AppRegistry
from app.security.authenticator import Authenticator
from app.security.principal import Principal
from app.sessions.base import BaseSessionService
from app.settings import Settings
from app.wire import ID_PATTERN


async def get_settings_dep(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


async def get_session_service(request: Request) -> BaseSessionService:
    """The process-wide session service built in the lifespan."""
    service: BaseSessionService = request.app.state.session_service
    return service


async def get_artifact_service(request: Request) -> BaseArtifactService:
    """The process-wide artifact service built in the lifespan."""
    service: BaseArtifactService = request.app.state.artifact_service
    return service


async def get_invocation_manager(request: Request) -> InvocationManager:
    """The process-wide invocation manager built in the lifespan."""
    manager: InvocationManager = request.app.state.invocation_manager
    return manager


async def get_registry(request: Request) -> AppRegistry:
    """The app catalogue built in the lifespan."""
    registry: AppRegistry = request.app.state.registry
    return registry


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionServiceDep = Annotated[BaseSessionService, Depends(get_session_service)]
ArtifactServiceDep = Annotated[BaseArtifactService, Depends(get_artifact_service)]
RegistryDep = Annotated[AppRegistry, Depends(get_registry)]
InvocationManagerDep = Annotated[InvocationManager, Depends(get_invocation_manager)]


async def authenticate(request: Request) -> Principal:
    """The caller (401 if credentials are required and bad; 429 over the rate limit).

    Reads `Authorization` / `X-API-Key` off the request rather than as `Header` parameters:
    this runs on every request, and each declared parameter costs FastAPI a pass per request.
    """
    authenticator: Authenticator = request.app.state.authenticator
    headers = request.headers
    principal = await authenticator.authenticate(
        headers.get("authorization"), headers.get("x-api-key")
    )
    await authenticator.check_rate(principal)
    request.state.principal = principal
    return principal


async def get_principal(request: Request) -> Principal:
    """The principal `authenticate` resolved for this request."""
    principal: Principal = request.state.principal
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]

AppNamePath = Annotated[
    str, Path(alias="app_name", description="App name (a folder of the agents dir).")
]
RawUserIdPath = Annotated[str, Path(pattern=ID_PATTERN, max_length=128, description="User id.")]
SessionIdPath = Annotated[str, Path(pattern=ID_PATTERN, max_length=128, description="Session id.")]
#: A retry with the same key and body gets the first request's invocation and result, whether
#: or not the first one's answer arrived (see README, "Retrying safely").
IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        max_length=255,
        description="Makes a retry safe: the same key and body return the first invocation.",
    ),
]


# The two path checks below read the principal and the registry off the request instead of
# depending on `PrincipalDep`/`RegistryDep`: each dependency node costs FastAPI a cache-key and
# four parameter passes per request, and these run on every user-scoped route. `authenticate`
# is a router dependency, so it has always run (and set request.state.principal) before them.


async def authorized_user_id(request: Request, user_id: RawUserIdPath) -> str:
    """The path's user id, if the principal may act for that user (else 404)."""
    principal: Principal = request.state.principal
    principal.check_user(user_id)
    return user_id


UserIdPath = Annotated[str, Depends(authorized_user_id)]


async def require_app(request: Request, app_name: AppNamePath) -> AppInfo:
    """The addressed app; 404 app-not-found if it does not exist or is not the principal's."""
    principal: Principal = request.state.principal
    principal.check_app(app_name)
    registry: AppRegistry = request.app.state.registry
    return registry.require(app_name)


KnownApp = Annotated[AppInfo, Depends(require_app)]


def clamp_page_size(requested: int | None, settings: Settings) -> int:
    """The page size to use: the requested one (default if absent), capped by the settings."""
    return min(requested or settings.default_page_size, settings.max_page_size)
