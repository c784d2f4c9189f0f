"""Pure-ASGI middleware: the request body size limit.

A pure ASGI middleware (not BaseHTTPMiddleware) so streaming bodies are counted as they arrive and
a chunked upload over the limit is cut off without buffering it. An over-limit request gets 413
problem+json whatever the route would have answered. Raw artifact uploads (`PUT .../content`) get
the artifact limit instead of the general one.
"""

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import ArtifactTooLarge, PayloadTooLarge


class _BodyTooLarge(Exception):
    """Raised into the app from `receive`, so no handler can mistake a cut body for a whole one."""


class BodySizeLimitMiddleware:
    """Answer 413 payload-too-large for request bodies above `max_bytes`."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, max_upload_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check Content-Length up front, then count streamed chunks."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["method"] == "PUT" and scope["path"].endswith("/content")
        limit = self.max_upload_bytes if upload else self.max_bytes
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
