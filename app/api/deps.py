"""Request-scoped dependencies as `Annotated` aliases, so routes declare what they need by type."""

from typing import Annotated

from fastapi import Depends, Path, Request

from app.artifacts.service import ArtifactService
from app.invocations.manager import InvocationManager
from app.invocations.registry import AppInfo, AppRegistry
from app.sessions.base import ID_PATTERN, BaseSessionService
from app.settings import Settings


def get_settings_dep(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


def get_session_service(request: Request) -> BaseSessionService:
    """The process-wide session service built in the lifespan."""
    service: BaseSessionService = request.app.state.session_service
    return service


def get_artifact_service(request: Request) -> ArtifactService:
    """The process-wide artifact service built in the lifespan."""
    service: ArtifactService = request.app.state.artifact_service
    return service


def get_invocation_manager(request: Request) -> InvocationManager:
    """The process-wide invocation manager built in the lifespan."""
    manager: InvocationManager = request.app.state.invocation_manager
    return manager


def get_registry(request: Request) -> AppRegistry:
    """The app catalogue built in the lifespan."""
    registry: AppRegistry = request.app.state.registry
    return registry


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionServiceDep = Annotated[BaseSessionService, Depends(get_session_service)]
ArtifactServiceDep = Annotated[ArtifactService, Depends(get_artifact_service)]
RegistryDep = Annotated[AppRegistry, Depends(get_registry)]
InvocationManagerDep = Annotated[InvocationManager, Depends(get_invocation_manager)]

AppNamePath = Annotated[
    str, Path(alias="app_name", description="App name (a folder of the agents dir).")
]
UserIdPath = Annotated[str, Path(pattern=ID_PATTERN, max_length=128, description="User id.")]
SessionIdPath = Annotated[str, Path(pattern=ID_PATTERN, max_length=128, description="Session id.")]


def require_app(app_name: AppNamePath, registry: RegistryDep) -> AppInfo:
    """The addressed app; 404 app-not-found if the agents dir has no such folder."""
    return registry.require(app_name)


KnownApp = Annotated[AppInfo, Depends(require_app)]
