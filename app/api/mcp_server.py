"""agentd as an MCP server: `/apps/{app_name}/mcp` serves the app as one MCP tool, `run`.

Streamable HTTP through the official `mcp` SDK's server side (its low-level `Server` and its
`StreamableHTTPSessionManager`), stateless: each POST is served on its own, no MCP session is
kept between requests, so any replica can answer any request. The SDK rather than a hand-written
JSON-RPC route because it owns what MCP clients depend on: protocol version negotiation (the
`initialize` handshake and the 2026-07-28 per-request envelope), the SSE framing of answers and
the wire types.

Before the SDK sees a request, `McpEndpoint` authenticates it like every other route
(`authenticate`: 401 `unauthenticated`, 429 `rate-limited`) and requires the app to exist and to
be the principal's (404 `app-not-found`), raising the usual errors so the app's problem handler
answers them as problem+json. A call acts as one user: the principal's own when it is bound to
a user; otherwise (an admin or service key, a JWT service token, AGENTD_AUTH=none) the user whose
id is the principal's id (`key:<key id>`, `jwt:<sub>`, `anonymous`).

`run` takes `{"message", "sessionId"?}`. Without `sessionId` it creates a session of that user
first; with one it continues that session (another user's session does not exist for it). The
turn runs through the InvocationManager as `POST .../invocations` with `mode=wait` and, as
`/run`, `multitaskStrategy=enqueue`: a call on a busy session waits its turn. The answer is
`{"text": <the last text an agent said in the turn>, "sessionId"}`, also as a text block. What
stops a turn (no such session, a failed run, a run that waits for the client's confirmation or
a long-running tool's result) is a tool error (`isError`) whose text is the problem as JSON
(`type`, `title`, `status`, `detail`, plus `sessionId`), never a protocol error.
"""

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson
from google.genai import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from pydantic import Field, ValidationError
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from app import __version__
from app.api.deps import authenticate
from app.api.json_body import check_depth
from app.errors import (
    AgentdError,
    AppLoadError,
    InternalError,
    InvalidRequest,
    SessionRequiresAction,
    StoredProblem,
)
from app.invocations.manager import InvocationManager
from app.invocations.models import CreateInvocationRequest, InvocationStatus, SessionRef
from app.invocations.registry import AppRegistry
from app.security.principal import Principal
from app.sessions.base import BaseSessionService
from app.sessions.models import Event
from app.settings import Settings
from app.wire import ID_PATTERN, WireModel, check_storable

logger = logging.getLogger("agentd.mcp")

#: The route, beside the app's REST resources.
#: The one tool an app is served as.
TOOL_NAME = "run"

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "minLength": 1, "description": "The user's message."},
        "sessionId": {
            "type": "string",
            "pattern": ID_PATTERN,
            "maxLength": 128,
            "description": "A session returned by an earlier call, to continue it; "
            "without it a new session is created.",
        },
    },
    "required": ["message"],
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The app's final answer."},
        "sessionId": {"type": "string", "description": "The session the turn ran in."},
    },
    "required": ["text", "sessionId"],
}


class RunArguments(WireModel):
    """The `run` tool's arguments."""

    message: str = Field(min_length=1)
    session_id: str | None = Field(default=None, pattern=ID_PATTERN, max_length=128)


class McpEndpoint:
    """What `/apps/{app_name}/mcp` serves (`app.api.mcp_route` starts it on first use):
    authenticates and authorizes, then lets the MCP SDK serve."""

    def __init__(self) -> None:
        self.server: Server[dict[str, Any]] = Server(
            "agentd", version=__version__, on_list_tools=_list_tools, on_call_tool=_call_tool
        )
        self._streamable_http: StreamableHTTPSessionManager | None = None
        # Stateless, each request's one-shot transport logs its end at INFO: one more line per
        # request beside the access log. Left alone if the operator configured that logger.
        transport_logger = logging.getLogger("mcp.server.streamable_http")
        if transport_logger.level == logging.NOTSET:
            transport_logger.setLevel(logging.WARNING)

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve MCP requests while this is open (the app's lifespan holds it)."""
        # The SDK's manager runs once; a new one per lifespan lets an app be started again.
        streamable_http = StreamableHTTPSessionManager(self.server, stateless=True)
        async with streamable_http.run():
            self._streamable_http = streamable_http
            try:
                yield
            finally:
                self._streamable_http = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """401/429/404 as problems, raised for the app's handler; else the SDK answers."""
        request = Request(scope, receive)
        principal = await authenticate(request)
        app_name: str = request.path_params["app_name"]
        principal.check_app(app_name)
        registry: AppRegistry = request.app.state.registry
        registry.require(app_name)
        if self._streamable_http is None:
            raise RuntimeError("The MCP endpoint serves only while the app's lifespan runs.")
        await self._streamable_http.handle_request(scope, receive, send)


def _http_request(ctx: ServerRequestContext[dict[str, Any]]) -> Request:
    # The streamable HTTP transport hands each message the Starlette request that carried it:
    # the one McpEndpoint authenticated (its scope holds the principal and the path params).
    request = ctx.request
    if not isinstance(request, Request):  # pragma: no cover - only HTTP reaches this server
        raise MCPError(INVALID_PARAMS, "agentd serves MCP over streamable HTTP only.")
    return request


def acting_user(principal: Principal) -> str:
    """The user a call acts as: the principal's user, or the principal's id if bound to none."""
    return principal.user_id if principal.user_id is not None else principal.id


async def _list_tools(
    ctx: ServerRequestContext[dict[str, Any]], _params: PaginatedRequestParams | None
) -> ListToolsResult:
    request = _http_request(ctx)
    app_name: str = request.path_params["app_name"]
    return ListToolsResult(tools=[run_tool(request.app.state.registry, app_name)])


def run_tool(registry: AppRegistry, app_name: str) -> Tool:
    """The `run` tool of an app, described by its root agent (else its folder's README line)."""
    info = registry.require(app_name)
    try:
        description = registry.load(app_name).root_agent.description or info.description
    except AppLoadError:
        description = info.description
    return Tool(
        name=TOOL_NAME,
        title=f"Ask {app_name}",
        description=description or f"Send a message to the agentd app {app_name!r}.",
        input_schema=INPUT_SCHEMA,
        output_schema=OUTPUT_SCHEMA,
    )


async def _call_tool(
    ctx: ServerRequestContext[dict[str, Any]], params: CallToolRequestParams
) -> CallToolResult:
    if params.name != TOOL_NAME:
        raise MCPError(INVALID_PARAMS, f"Unknown tool {params.name!r}; the only tool is 'run'.")
    request = _http_request(ctx)
    session_id: str | None = None
    try:
        settings: Settings = request.app.state.settings
        arguments = _arguments(params.arguments or {}, settings.max_json_depth)
        session_id = arguments.session_id
        principal: Principal = request.state.principal
        app_name: str = request.path_params["app_name"]
        user_id = acting_user(principal)
        if session_id is None:
            service: BaseSessionService = request.app.state.session_service
            session_id = (await service.create_session(app_name=app_name, user_id=user_id)).id
        ref = SessionRef(app_name, user_id, session_id)
        text = await run_turn(request.app.state.invocation_manager, ref, arguments.message)
    except AgentdError as problem:
        return _tool_error(problem, session_id)
    except Exception:
        # The SDK would put the exception's text in the answer; internals stay in the log.
        logger.exception("MCP tool call failed")
        return _tool_error(InternalError(), session_id)
    answer = {"text": text, "sessionId": session_id}
    return CallToolResult(content=[TextContent(text=text)], structured_content=answer)


def _arguments(raw: dict[str, Any], max_depth: int) -> RunArguments:
    check_depth(raw, ("arguments",), max_depth)
    check_storable(raw, ("arguments",))
    try:
        return RunArguments.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        fields = ", ".join(".".join(str(part) for part in error["loc"]) for error in errors)
        raise InvalidRequest(f"Invalid arguments: {fields}.", errors=errors) from exc


async def run_turn(manager: InvocationManager, ref: SessionRef, message: str) -> str:
    """Run one turn of the app for `message` in the session; its final text.

    A turn that does not complete raises its problem (SessionRequiresAction when it waits for
    the client).
    """
    body = CreateInvocationRequest(
        new_message=types.Content(role="user", parts=[types.Part(text=message)]),
        mode="wait",
        multitask_strategy="enqueue",
    )
    handle = await manager.start(ref, body)
    final = await manager.wait(handle)
    if final.error is not None:
        raise StoredProblem(final.error)
    if final.status == InvocationStatus.REQUIRES_ACTION:
        raise SessionRequiresAction(
            f"Invocation {final.id!r} waits for the client (a confirmation or a long-running "
            f"tool's result); answer it with POST .../invocations/{final.id}/resume.",
            invocationId=final.id,
        )
    return final_text(await manager.persisted_events(handle))


def final_text(events: Sequence[Event]) -> str:
    """The text of the last event an agent wrote with text (thoughts left out), or ""."""
    for event in reversed(events):
        if event.author == "user" or event.partial or event.content is None:
            continue
        texts = [part.text for part in event.content.parts or () if part.text and not part.thought]
        if texts:
            return "".join(texts)
    return ""


def _tool_error(problem: AgentdError, session_id: str | None) -> CallToolResult:
    body = problem.marshal()
    if session_id is not None:
        body["sessionId"] = session_id
    text = orjson.dumps(body).decode()
    return CallToolResult(content=[TextContent(text=text)], is_error=True)
