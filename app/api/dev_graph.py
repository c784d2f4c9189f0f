"""ADK dev UI's agent-graph routes (`adk web`'s `/dev/apps/{app}/build_graph[_image]`).

The dev UI's Info pane asks for these as soon as an app is picked; without them its graph stays
empty. The shapes follow google-adk 2.13's `cli/dev_server.py`: `build_graph` is the app's agent
tree as JSON, `build_graph_image` the DOT source by path (`{"": {"dotSrc": ...}}`: ADK's
`GetEventGraphResult` goes out camelCased, and the bundle reads `dotSrc`), which it renders
itself with Viz.js. `format=svg` (an agentd addition) renders the image on the server when
graphviz's `dot` program is installed, else answers 404 `graphviz-not-installed`.
"""

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.agents.graph import app_info, graph_dots, render_svg
from app.api.deps import KnownApp, RegistryDep
from app.api.json_body import JsonRoute

router = APIRouter(route_class=JsonRoute, prefix="/dev/apps/{app_name}", tags=["dev-ui"])

_APP_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such app (app-not-found)."}
}


class GraphDot(BaseModel):
    """One graph's DOT source (ADK's `GetEventGraphResult`, camelCase on the wire like ADK's)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    dot_src: str


@router.get(
    "/build_graph",
    summary="The app's agent tree (ADK dev UI)",
    responses=_APP_NOT_FOUND,
)
async def get_app_info(app: KnownApp, registry: RegistryDep) -> dict[str, Any]:
    """`{name, root_agent}`: each agent's name, description, model, instruction, tools and
    sub-agents, as ADK's `serialize_app_info` writes them for the dev UI's Info pane."""
    return app_info(app.name, registry.load(app.name).root_agent)


@router.get(
    "/build_graph_image",
    response_model=dict[str, GraphDot],
    summary="The app's agent graph as graphviz DOT, or drawn as SVG",
    responses={
        404: {
            "description": "No such app (app-not-found) or node (graph-node-not-found), or "
            "format=svg without graphviz's `dot` (graphviz-not-installed)."
        },
        200: {"content": {"image/svg+xml": {}}},
    },
)
async def get_app_info_image(
    app: KnownApp,
    registry: RegistryDep,
    dark_mode: Annotated[bool, Query(description="Dark theme colours.")] = False,
    node: Annotated[
        str | None, Query(max_length=1024, description="Path of a sub-agent, `a/b/c`.")
    ] = None,
    format: Annotated[
        Literal["svg"] | None,
        Query(description="Draw the graph as SVG (needs graphviz's `dot`), not DOT JSON."),
    ] = None,
) -> dict[str, GraphDot] | Response:
    """DOT source by node path (`""` for the root), as ADK's dev server answers; with
    `format=svg`, the requested node's graph drawn as an SVG image."""
    root = app_info(app.name, registry.load(app.name).root_agent)["root_agent"]
    dots = graph_dots(root, node or "", dark_mode=dark_mode)
    if format == "svg":
        return Response(render_svg(dots[node or ""]), media_type="image/svg+xml")
    return {path: GraphDot(dot_src=source) for path, source in dots.items()}
