"""A local stand-in for the Gemini REST API, so tests drive the real google-genai client offline.

`GeminiStub` serves `POST /{api_version}/models/{model}:generateContent` and
`:streamGenerateContent` (as SSE `data: {json}` events, the way the API answers `?alt=sse`) on
127.0.0.1 from a FIFO of scripted replies, and records every request it gets. It uses the
standard library's `ThreadingHTTPServer`: the socket is bound when the stub starts, so a test
can call it at once without polling for readiness.

    with GeminiStub() as stub:
        stub.reply_text("Hello!")
        llm = Gemini(model="gemini-2.0-flash", api_key="test-key", base_url=stub.base_url)
"""

import json
import re
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, TypedDict
from urllib.parse import urlsplit

from tests.stub_server import ScriptedServer

_ROUTE = re.compile(
    r"^/(?P<api_version>[^/]+)/(?:models/)?(?P<model>.+):(?P<method>generateContent|streamGenerateContent)$"
)

_HTTP_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class RecordedRequest(TypedDict):
    """One request the stub received."""

    method: str
    path: str
    query: str
    model: str
    stream: bool
    headers: dict[str, str]
    body: dict[str, Any]


def text_response(text: str, *, finish_reason: str | None = "STOP") -> dict[str, Any]:
    """A `GenerateContentResponse` JSON body whose answer is `text`."""
    return _response([{"text": text}], finish_reason=finish_reason)


def function_call_response(
    name: str, args: dict[str, Any] | None = None, *, finish_reason: str | None = "STOP"
) -> dict[str, Any]:
    """A `GenerateContentResponse` JSON body that calls function `name` with `args`."""
    call = {"functionCall": {"name": name, "args": args or {}}}
    return _response([call], finish_reason=finish_reason)


def _response(parts: list[dict[str, Any]], *, finish_reason: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-stub",
    }


@dataclass(frozen=True)
class _Reply:
    status: int
    body: dict[str, Any] | None = None
    events: tuple[dict[str, Any], ...] | None = None


class GeminiStub(ScriptedServer[_Reply, RecordedRequest]):
    """The Gemini REST API on 127.0.0.1, answering from a FIFO of scripted replies."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    @property
    def base_url(self) -> str:
        """The stub's root URL, for `Gemini(base_url=...)` or `HttpOptions(base_url=...)`."""
        return f"{self.root_url}/"

    def reply_text(self, text: str) -> None:
        """Answer the next request with a text reply (one SSE event if it streams)."""
        self.reply_json(text_response(text))

    def reply_function_call(self, name: str, args: dict[str, Any] | None = None) -> None:
        """Answer the next request with a call of function `name` with `args`."""
        self.reply_json(function_call_response(name, args))

    def reply_stream(self, chunks: list[str]) -> None:
        """Answer the next (streaming) request with one SSE event per text chunk."""
        events = [text_response(chunk, finish_reason=None) for chunk in chunks]
        if events:
            events[-1]["candidates"][0]["finishReason"] = "STOP"
        self.reply_events(events)

    def reply_events(self, events: list[dict[str, Any]]) -> None:
        """Answer the next (streaming) request with these `GenerateContentResponse` events."""
        self._enqueue(_Reply(status=200, events=tuple(events)))

    def reply_json(self, body: dict[str, Any], status: int = 200) -> None:
        """Answer the next request with this JSON body (an SSE event if it streams and is 200)."""
        self._enqueue(_Reply(status=status, body=body))

    def reply_error(self, status: int, message: str, status_name: str | None = None) -> None:
        """Answer the next request with a Google-style `{"error": {code, message, status}}` body."""
        name = status_name or _HTTP_STATUS_NAMES.get(status, "UNKNOWN")
        error = {"error": {"code": status, "message": message, "status": name}}
        self.reply_json(error, status=status)


def _handler_for(stub: GeminiStub) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to `stub`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            route = _ROUTE.match(url.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if route is None:
                self._send_error(404, f"GeminiStub has no route for {url.path}.", "NOT_FOUND")
                return
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                self._send_error(400, "GeminiStub got a body that is not JSON.", "INVALID_ARGUMENT")
                return
            stream = route["method"] == "streamGenerateContent"
            reply = stub._next_reply(
                RecordedRequest(
                    method="POST",
                    path=url.path,
                    query=url.query,
                    model=route["model"],
                    stream=stream,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
            if reply is None:
                self._send_error(
                    500, f"GeminiStub has no scripted reply left for {url.path}.", "INTERNAL"
                )
            elif reply.events is not None and not stream:
                self._send_error(
                    500, "GeminiStub's next reply is a stream but the call is not.", "INTERNAL"
                )
            elif reply.events is not None:
                self._send_sse(list(reply.events))
            elif stream and reply.status == 200 and reply.body is not None:
                self._send_sse([reply.body])
            else:
                self._send_json(reply.status, reply.body or {})

        def _send_error(self, status: int, message: str, status_name: str) -> None:
            error = {"error": {"code": status, "message": message, "status": status_name}}
            self._send_json(status, error)

        def _send_json(self, status: int, body: dict[str, Any]) -> None:
            self._send(status, "application/json; charset=UTF-8", json.dumps(body).encode())

        def _send_sse(self, events: list[dict[str, Any]]) -> None:
            data = "".join(f"data: {json.dumps(event)}\r\n\r\n" for event in events)
            self._send(200, "text/event-stream", data.encode())

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

    return Handler
