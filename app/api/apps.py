"""App catalogue routes (ADK's `/list-apps`)."""

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import PrincipalDep, RegistryDep
from app.api.json_body import JsonRoute
from app.api.schemas import AppSummary, ListAppsResponse

router = APIRouter(route_class=JsonRoute, tags=["apps"])


@router.get(
    "/list-apps",
    response_model=list[str] | ListAppsResponse,
    response_model_exclude_none=True,
    summary="List the apps of the agents directory",
)
async def list_apps(
    registry: RegistryDep, principal: PrincipalDep, detailed: Annotated[bool, Query()] = False
) -> list[str] | ListAppsResponse:
    """Sorted app names (ADK); `detailed=true` adds descriptions. Unknown params are ignored."""
    apps = [app for app in registry.list_apps() if principal.sees_app(app.name)]
    if not detailed:
        return [app.name for app in apps]
    return ListAppsResponse(
        apps=[
            AppSummary(name=app.name, root_agent_name=app.name, description=app.description)
            for app in apps
        ]
    )
