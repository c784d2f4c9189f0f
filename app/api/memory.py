"""Memory routes (ADK): add a session to the user's memory; search it."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import Field

from app.api.deps import KnownApp, SessionServiceDep, UserIdPath
from app.api.json_body import JsonRoute
from app.errors import ServiceUnavailable, SessionNotFound
from app.memory.base import BaseMemoryService, SearchMemoryResponse
from app.wire import ID_PATTERN, WireModel

router = APIRouter(
    route_class=JsonRoute, prefix="/apps/{app_name}/users/{user_id}/memory", tags=["memory"]
)


class AddSessionToMemoryRequest(WireModel):
    """Which session to remember."""

    session_id: str = Field(pattern=ID_PATTERN, max_length=128)


def _memory(request: Request) -> BaseMemoryService:
    memory: BaseMemoryService | None = getattr(request.app.state, "memory_service", None)
    if memory is None:
        raise ServiceUnavailable("No memory service is configured.")
    return memory


@router.patch(
    "",
    response_model=None,
    summary="Add a session's events to the user's memory (200 `null`, as ADK)",
    responses={404: {"description": "No such session (session-not-found)."}},
)
async def add_session_to_memory(
    app: KnownApp,
    user_id: UserIdPath,
    body: AddSessionToMemoryRequest,
    sessions: SessionServiceDep,
    request: Request,
) -> Response:
    """Remember the session's text events (idempotent)."""
    session = await sessions.get_session(
        app_name=app.name, user_id=user_id, session_id=body.session_id
    )
    if session is None:
        raise SessionNotFound(f"Session {body.session_id!r} does not exist.")
    await _memory(request).add_session_to_memory(session)
    return JSONResponse(None)


@router.get(
    "",
    response_model_exclude_none=True,
    summary="Search the user's memory",
)
async def search_memory(
    app: KnownApp,
    user_id: UserIdPath,
    request: Request,
    query: Annotated[str, Query(max_length=1000)] = "",
) -> SearchMemoryResponse:
    """Remembered events matching any word of `query`, newest first."""
    return await _memory(request).search_memory(app_name=app.name, user_id=user_id, query=query)
