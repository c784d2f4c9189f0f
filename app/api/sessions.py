"""Session routes (ADK-compatible): create, get, list, patch state, delete, page events.

The session's `last_seq` is served as a strong ETag and accepted in `If-Match` on PATCH, which
gives HTTP clients the same optimistic concurrency the engine has, without adding keys to ADK's
Session JSON. The list route returns ADK's bare array, most recently updated first and by default
as many sessions as the largest page holds; its cursor travels in `X-Next-Page-Token` (and a
`Link: rel="next"` header). A create with `events` imports them as the session is created
(ADK's import of a session exported with GET), bounded and in time slices
(`app.api.session_import`).
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Header, Query, Request, Response, status
from fastapi.responses import JSONResponse

from app.api.deps import (
    KnownApp,
    PrincipalDep,
    SessionIdPath,
    SessionServiceDep,
    SettingsDep,
    UserIdPath,
    clamp_page_size,
)
from app.api.json_body import JsonRoute
from app.api.schemas import CreateSessionRequest, EventPageResponse, UpdateSessionRequest
from app.api.session_import import SessionImportRoute, created_response, validate_events
from app.errors import DatabaseUnavailable, InvalidRequest, SessionNotFound
from app.sessions.base import GetSessionConfig
from app.sessions.models import Session
from app.wire import MAX_SEQ

router = APIRouter(
    route_class=JsonRoute, prefix="/apps/{app_name}/users/{user_id}/sessions", tags=["sessions"]
)

PageSize = Annotated[int | None, Query(alias="pageSize", ge=1, le=10_000)]
PageToken = Annotated[str | None, Query(alias="pageToken", max_length=1024)]


def _etag(session: Session) -> str:
    return f'"{session.last_seq}"'


def _created(session: Session) -> Response:
    # Serialized by pydantic straight to JSON: returning the model would make FastAPI validate
    # it against `response_model` and serialize it a second time (a third of a create's cost).
    return Response(
        session.model_dump_json(by_alias=True, exclude_none=True),
        status_code=status.HTTP_201_CREATED,
        media_type="application/json",
        headers={"ETag": _etag(session)},
    )


def _parse_if_match(value: str | None) -> int | None:
    if value is None or value.strip() == "*":
        return None
    tag = value.strip().removeprefix("W/").strip('"')
    if not tag.isdigit() or int(tag) > MAX_SEQ:
        raise InvalidRequest("If-Match must be an ETag this server issued for the session.")
    return int(tag)


async def create_session(
    app: KnownApp,
    user_id: UserIdPath,
    sessions: SessionServiceDep,
    principal: PrincipalDep,
    body: Annotated[CreateSessionRequest | None, Body()] = None,
) -> Response:
    """Create a session with an optional caller-chosen id, initial state and events to import."""
    body = body or CreateSessionRequest()
    principal.check_state_delta(body.state)
    if not body.events:
        session = await sessions.create_session(
            app_name=app.name, user_id=user_id, state=body.state, session_id=body.session_id
        )
        return _created(session)
    events = await validate_events(body.events, ("body", "events"))
    for event in events:
        principal.check_state_delta(event.actions.state_delta)
    session = await sessions.import_session(
        app_name=app.name,
        user_id=user_id,
        events=events,
        state=body.state,
        session_id=body.session_id,
        loc=("body",),
    )
    return await created_response(session)


# Registered as the decorators register the others, with the import's bounded body parser.
router.add_api_route(
    "",
    create_session,
    methods=["POST"],
    status_code=status.HTTP_201_CREATED,
    response_model=Session,
    response_model_exclude_none=True,
    summary="Create a session",
    responses={
        409: {"description": "A session with that id exists (session-exists)."},
        413: {
            "description": "Request body too large (payload-too-large), or more events to "
            "import than AGENTD_MAX_IMPORT_EVENTS (import-too-large)."
        },
    },
    route_class_override=SessionImportRoute,
)


@router.post(
    "/{session_id}",
    status_code=status.HTTP_201_CREATED,
    response_model=Session,
    response_model_exclude_none=True,
    summary="Create a session with the id in the path (ADK legacy form)",
    responses={409: {"description": "A session with that id exists (session-exists)."}},
)
async def create_session_with_id(
    app: KnownApp,
    user_id: UserIdPath,
    session_id: SessionIdPath,
    sessions: SessionServiceDep,
    principal: PrincipalDep,
    state: Annotated[dict[str, object] | None, Body()] = None,
) -> Response:
    """Create a session whose id is given in the path; the body is its initial state."""
    principal.check_state_delta(state)
    session = await sessions.create_session(
        app_name=app.name, user_id=user_id, state=state, session_id=session_id
    )
    return _created(session)


@router.get(
    "",
    response_model=list[Session],
    response_model_exclude_none=True,
    summary="List the user's sessions, most recently updated first (without events)",
)
async def list_sessions(
    app: KnownApp,
    user_id: UserIdPath,
    sessions: SessionServiceDep,
    settings: SettingsDep,
    request: Request,
    response: Response,
    page_size: PageSize = None,
    page_token: PageToken = None,
) -> list[Session]:
    """Sessions, most recently updated first, up to `pageSize` (default: the largest page
    there is); follow `X-Next-Page-Token` (or `Link: rel="next"`) for the next page."""
    page = await sessions.list_sessions(
        app_name=app.name,
        user_id=user_id,
        page_size=min(page_size or settings.max_page_size, settings.max_page_size),
        page_token=page_token,
    )
    if page.next_page_token:
        response.headers["X-Next-Page-Token"] = page.next_page_token
        next_url = request.url.include_query_params(pageToken=page.next_page_token)
        response.headers["Link"] = f'<{next_url}>; rel="next"'
    return page.sessions


@router.get(
    "/{session_id}",
    response_model=Session,
    response_model_exclude_none=True,
    summary="Get a session with its state and events",
    responses={404: {"description": "No such session (session-not-found)."}},
)
async def get_session(
    app: KnownApp,
    user_id: UserIdPath,
    session_id: SessionIdPath,
    sessions: SessionServiceDep,
    num_recent_events: Annotated[
        int | None, Query(alias="numRecentEvents", ge=0, le=MAX_SEQ)
    ] = None,
    after_seq: Annotated[int | None, Query(alias="afterSeq", ge=0, le=MAX_SEQ)] = None,
) -> Response:
    """The session; `numRecentEvents` keeps the last N events, `afterSeq` those after a seq."""
    found = await sessions.get_session_json(
        app_name=app.name,
        user_id=user_id,
        session_id=session_id,
        config=GetSessionConfig(num_recent_events=num_recent_events, after_seq=after_seq),
    )
    if found is None:
        raise SessionNotFound(f"Session {session_id!r} does not exist.")
    body, last_seq = found
    # Stored events are already wire JSON: serve them as they are, without a model round trip.
    return Response(body, media_type="application/json", headers={"ETag": f'"{last_seq}"'})


@router.patch(
    "/{session_id}",
    response_model=Session,
    response_model_exclude_none=True,
    summary="Apply a state delta (recorded as a user event)",
    responses={
        404: {"description": "No such session (session-not-found)."},
        409: {"description": "If-Match is stale (session-conflict)."},
    },
)
async def update_session(
    app: KnownApp,
    user_id: UserIdPath,
    session_id: SessionIdPath,
    body: UpdateSessionRequest,
    sessions: SessionServiceDep,
    response: Response,
    principal: PrincipalDep,
    if_match: Annotated[str | None, Header(max_length=64)] = None,
) -> Session:
    """Record `stateDelta` as a user event; `If-Match: "<seq>"` makes it conditional."""
    principal.check_state_delta(body.state_delta)
    written = await sessions.apply_state_delta(
        app_name=app.name,
        user_id=user_id,
        session_id=session_id,
        state_delta=body.state_delta,
        expected_seq=_parse_if_match(if_match),
    )
    try:
        session = await sessions.get_session(
            app_name=app.name, user_id=user_id, session_id=session_id
        )
    except DatabaseUnavailable:
        # The write committed; a 5xx now would tell the client it did not. Answer with the
        # session as the write saw it (its new event only) rather than fail the read-back.
        session = written
    if session is None:  # deleted right after our write
        raise SessionNotFound(f"Session {session_id!r} does not exist.")
    response.headers["ETag"] = _etag(session)
    return session


@router.delete(
    "/{session_id}",
    response_model=None,
    summary="Delete a session with its events and artifacts (200 `null`, as ADK)",
    responses={404: {"description": "No such session (session-not-found)."}},
)
async def delete_session(
    app: KnownApp, user_id: UserIdPath, session_id: SessionIdPath, sessions: SessionServiceDep
) -> Response:
    """Delete the session, answering ADK's 200 `null`; 404 if it does not exist (ADK: 200)."""
    await sessions.delete_session(app_name=app.name, user_id=user_id, session_id=session_id)
    return JSONResponse(None)


@router.get(
    "/{session_id}/events",
    response_model=EventPageResponse,
    response_model_exclude_none=True,
    summary="Page through a session's events by seq",
    responses={404: {"description": "No such session (session-not-found)."}},
)
async def list_session_events(
    app: KnownApp,
    user_id: UserIdPath,
    session_id: SessionIdPath,
    sessions: SessionServiceDep,
    settings: SettingsDep,
    after_seq: Annotated[int | None, Query(alias="afterSeq", ge=0, le=MAX_SEQ)] = None,
    order: Literal["asc", "desc"] = "asc",
    page_size: PageSize = None,
    page_token: PageToken = None,
) -> EventPageResponse:
    """Events in seq order (`order=desc` for newest first), `pageSize` at a time."""
    page = await sessions.list_events(
        app_name=app.name,
        user_id=user_id,
        session_id=session_id,
        after_seq=after_seq,
        page_size=clamp_page_size(page_size, settings),
        page_token=page_token,
        descending=order == "desc",
    )
    return EventPageResponse(events=page.events, next_page_token=page.next_page_token)
