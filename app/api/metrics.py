"""`GET /metrics`: this replica's Prometheus metrics (admins only when authentication is on)."""

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from app.api.deps import PrincipalDep
from app.api.json_body import JsonRoute
from app.errors import Forbidden
from app.observability import Metrics

router = APIRouter(route_class=JsonRoute, tags=["observability"])


def metrics_response(metrics: Metrics) -> Response:
    """The `GET /metrics` response for `metrics`."""
    return Response(content=metrics.exposition(), media_type=CONTENT_TYPE_LATEST)


@router.get(
    "/metrics",
    summary="Prometheus metrics of this replica",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "Prometheus text format."},
        403: {"description": "Only admin principals read metrics (forbidden)."},
    },
)
async def metrics(request: Request, principal: PrincipalDep) -> Response:
    """HTTP, invocation, model, tool, database and lease series."""
    if not principal.admin:
        raise Forbidden("Only admin principals may read metrics.")
    return metrics_response(request.app.state.metrics)
