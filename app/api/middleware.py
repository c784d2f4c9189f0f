"""Pure-ASGI middleware: the request body size limit.

A pure ASGI middleware (not BaseHTTPMiddleware) so streaming bodies are counted as they arrive and
a chunked upload over the limit is cut off without buffering it. An over-limit request gets 413
problem+json whatever the route would have answered.
"""

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import PayloadTooLarge


class BodySizeLimitMiddleware:
    """Answer 413 payload-too-large for request bodies above `max_bytes`."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check Content-Length up front, then count streamed chunks."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._reject(send)
                return
        received = 0
        exceeded = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    # Hand the app an empty, final chunk: it stops reading; we answer 413.
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                return
            started = True
            await send(message)

        await self.app(scope, counting_receive, guarded_send)
        if exceeded and not started:
            await self._reject(send)

    async def _reject(self, send: Send) -> None:
        problem = PayloadTooLarge(f"The request body exceeds {self.max_bytes} bytes.")
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
