"""App catalogue routes (ADK's `/list-apps`)."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from app.api.deps import PrincipalDep, RegistryDep
from app.api.json_body import JsonRoute
from app.api.schemas import AppSummary, ListAppsResponse
from app.errors import AppLoadError
from app.invocations.registry import AppInfo, AppRegistry

router = APIRouter(route_class=JsonRoute, tags=["apps"])


@router.get(
    "/list-apps",
    response_model=list[str] | ListAppsResponse,
    response_model_exclude_none=True,
    summary="List the apps of the agents directory",
)
async def list_apps(
    registry: RegistryDep, principal: PrincipalDep, detailed: Annotated[bool, Query()] = False
) -> list[str] | Response:
    """Sorted app names (ADK); `detailed=true` adds descriptions. Unknown params are ignored."""
    apps = [app for app in registry.list_apps() if principal.sees_app(app.name)]
    if not detailed:
        return [app.name for app in apps]
    summaries = ListAppsResponse(apps=[_summary(registry, app) for app in apps])
    # Every key ADK writes, `agents: null` included (the route's default drops None fields).
    return JSONResponse(summaries.model_dump(mode="json", by_alias=True))


def _summary(registry: AppRegistry, app: AppInfo) -> AppSummary:
    """The root agent's name and description (ADK loads each app to list it, so does this); an
    app that fails to load is still listed, under its folder's name and README line."""
    try:
        root = registry.load(app.name).root_agent
    except AppLoadError:
        return AppSummary(name=app.name, root_agent_name=app.name, description=app.description)
    return AppSummary(
        name=app.name,
        root_agent_name=root.name,
        description=root.description or app.description,
    )
