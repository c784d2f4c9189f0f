"""The pure-ASGI middlewares: request ids, HTTP metrics and the request body size limit.

Pure ASGI (not BaseHTTPMiddleware) so streamed bodies, in both directions, pass through
unbuffered. They live here, in the API layer, so that the observability package they report to
never loads Starlette: `RequestIdMiddleware` binds `request_id_var` for the request's logs, and
`MetricsMiddleware` records each answered request in a `Metrics`.

The body size limit counts streamed chunks as they arrive, so a chunked upload over the limit is
cut off without buffering it. An over-limit request gets 413 problem+json whatever the route would
have answered. Raw artifact uploads (`PUT .../content`) get the artifact limit instead of the
general one, and session creates (`POST /apps/{app}/users/{user}/sessions`, which import events)
the import limit.
"""

import logging
import re
import time
import uuid

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import ArtifactTooLarge, PayloadTooLarge
from app.observability.logging import REQUEST_ID_HEADER, request_id_var
from app.observability.metrics import CLIENT_CLOSED_REQUEST, UNMATCHED_ROUTE, Metrics

_REQUEST_ID_HEADER_KEY = REQUEST_ID_HEADER.lower().encode("latin-1")
# Echoed into headers and logs, so only a short, inert alphabet is accepted from clients.
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
#: The create-session route, whose body may import a session's events.
_SESSIONS = re.compile(r"/apps/[^/]+/users/[^/]+/sessions/?")


def _incoming_request_id(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == _REQUEST_ID_HEADER_KEY:
            candidate = value.decode("latin-1")
            return candidate if _VALID_REQUEST_ID.fullmatch(candidate) else None
    return None


class RequestIdMiddleware:
    """Pure-ASGI middleware: binds the request id for the request and echoes it as X-Request-ID.

    The client's `X-Request-ID` is kept when it is at most 128 of `[A-Za-z0-9._-]`; otherwise a
    new uuid4 hex is used.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle the request with `request_id_var` set; add the header to the response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming_request_id(scope) or uuid.uuid4().hex
        header = (_REQUEST_ID_HEADER_KEY, request_id.encode("latin-1"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if all(name.lower() != _REQUEST_ID_HEADER_KEY for name, _ in headers):
                    headers.append(header)
                message = {**message, "headers": headers}
            await send(message)

        token = request_id_var.set(request_id)
        # Not reset when the app raises: the server-error handler that logs the exception runs
        # outside this middleware but in the same task, and its line should carry the id too.
        # The context dies with the request's task either way.
        await self.app(scope, receive, send_with_id)
        request_id_var.reset(token)


def route_template(scope: Scope) -> str:
    """The template of the route that handled `scope` (after the app ran), or "unmatched"."""
    # FastAPI >= 0.16x keeps included routers un-flattened: the matched APIRoute's own path then
    # lacks the prefixes of the routers around it, which FastAPI records in its route context.
    fastapi_scope = scope.get("fastapi")
    if isinstance(fastapi_scope, dict):
        context = fastapi_scope.get("effective_route_context")
        path_format = getattr(context, "path_format", None)
        if isinstance(path_format, str) and path_format:
            return path_format
    # Starlette's Router sets scope["route"] to the route it matched (fully or, for 405, partly).
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) and path else UNMATCHED_ROUTE


#: The access log's logger: one line per answered request (`MetricsMiddleware` writes it).
access_logger = logging.getLogger("agentd.access")


class MetricsMiddleware:
    """Pure-ASGI middleware recording `agentd_http_requests_total` and request durations, and
    writing the access log line (`access_log`): both need the same status and duration, and one
    wrapper around `send` per request is cheaper than two.

    The access line replaces uvicorn's (which `configure_logging` silences): uvicorn's has no
    duration, no route, no request id, and is formatted even when nothing would print it.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics, *, access_log: bool = True) -> None:
        self.app = app
        self.metrics = metrics
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, then record its method, route template, status and duration."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status: int | None = None

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        except Exception:
            # The server-error handler outside this middleware answers 500 for it.
            if status is None:
                status = 500
            raise
        finally:
            seconds = time.perf_counter() - start
            route = route_template(scope)
            answered = CLIENT_CLOSED_REQUEST if status is None else status
            self.metrics.observe_request(scope["method"], route, answered, seconds)
            if self.access_log and access_logger.isEnabledFor(logging.INFO):
                _log_access(scope, route, answered, seconds)


def _log_access(scope: Scope, route: str, status: int, seconds: float) -> None:
    """The request's access line: readable as text, its fields as JSON keys."""
    client = scope.get("client")
    duration_ms = round(seconds * 1000, 2)
    access_logger.info(
        "%s %s %d %.2f ms",
        scope["method"],
        scope["path"],
        status,
        duration_ms,
        extra={
            "method": scope["method"],
            "path": scope["path"],
            "route": route,
            "status": status,
            "duration_ms": duration_ms,
            "client": client[0] if client else None,
        },
    )


class _BodyTooLarge(Exception):
    """Raised into the app from `receive`, so no handler can mistake a cut body for a whole one."""


class BodySizeLimitMiddleware:
    """Answer 413 payload-too-large for request bodies above `max_bytes` (`max_upload_bytes`
    for raw artifact uploads, `max_import_bytes` for session creates)."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, max_upload_bytes: int, max_import_bytes: int
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes
        self.max_import_bytes = max_import_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check Content-Length up front, then count streamed chunks."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["method"] == "PUT" and scope["path"].endswith("/content")
        limit = self.max_upload_bytes if upload else self.max_bytes
        if scope["method"] == "POST" and _SESSIONS.fullmatch(scope["path"]):
            limit = self.max_import_bytes
        problem = ArtifactTooLarge if upload else PayloadTooLarge
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await self._reject(send, problem, limit)
                return
        received = 0
        exceeded = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                return
            started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            # Whatever the app made of the aborted body (its own error included), the answer is 413.
            if not exceeded:
                raise
        if exceeded and not started:
            await self._reject(send, problem, limit)

    @staticmethod
    async def _reject(send: Send, problem_class: type[PayloadTooLarge], limit: int) -> None:
        problem = problem_class(f"The request body exceeds {limit} bytes.")
        body = orjson.dumps(problem.marshal())
        await send(
            {
                "type": "http.response.start",
                "status": problem.status,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
