"""`GET /metrics`: this replica's Prometheus metrics (admins only when authentication is on)."""

from fastapi import APIRouter, Request, Response

from app.api.deps import PrincipalDep
from app.errors import Forbidden
from app.observability import metrics_response

router = APIRouter(tags=["observability"])


@router.get(
    "/metrics",
    summary="Prometheus metrics of this replica",
    operation_id="metrics",
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
