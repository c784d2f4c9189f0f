"""A local stand-in for Anthropic's Messages API: tests drive the real `anthropic` SDK offline.

`AnthropicStub` serves `POST /v1/messages` on 127.0.0.1 from a FIFO of scripted replies and
records every request it gets. A reply is a `Message` JSON body; when the request asks for
`"stream": true` the same message is sent as the API's server-sent events (`message_start`,
`ping`, `content_block_start` / `content_block_delta` / `content_block_stop` per block,
`message_delta`, `message_stop`), in chunked transfer encoding like the real API, optionally
with a delay between events (a slow stream). Errors use the API's
`{"type": "error", "error": {"type", "message"}}` body and may carry headers (`retry-after`).

The stub notes whether a stream was abandoned: when the client drops the connection before the
last event, the next write fails and `abandoned` is set. That is how a test sees that cancelling
a consumer closed the upstream connection.

    with AnthropicStub() as stub:
        stub.reply_text("Hello!")
        llm = Claude(model="claude-sonnet-4-6", api_key="test-key", base_url=stub.base_url)
"""

import json
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypedDict
from urllib.parse import urlsplit

from tests.stub_server import ScriptedServer

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

DEFAULT_USAGE: dict[str, int] = {"input_tokens": 10, "output_tokens": 5}

#: One server-sent event: its name and its JSON data.
Event = tuple[str, dict[str, Any]]


class RecordedRequest(TypedDict):
    """One request the stub received."""

    method: str
    path: str
    stream: bool
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float


def text_block(text: str) -> dict[str, Any]:
    """A `text` content block."""
    return {"type": "text", "text": text}


def tool_use_block(tool_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A `tool_use` content block (the model calling tool `name`)."""
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def thinking_block(thinking: str, signature: str = "sig") -> dict[str, Any]:
    """A `thinking` content block (extended thinking)."""
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def message(
    content: list[dict[str, Any]],
    *,
    stop_reason: str | None = "end_turn",
    usage: dict[str, int] | None = None,
    model: str = "claude-stub-1",
) -> dict[str, Any]:
    """A `Message` JSON body, as `POST /v1/messages` answers."""
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(usage or DEFAULT_USAGE),
    }


def stream_events(body: dict[str, Any], text_chunks: list[str] | None = None) -> list[Event]:
    """`body` (a Message) as the API streams it: (event name, data) pairs.

    Text blocks are sent in `text_chunks` (when given, for the first text block) or in two
    halves; tool input JSON in pieces of about ten characters, as `input_json_delta`s.
    """
    usage = body.get("usage") or DEFAULT_USAGE
    start = {
        **body,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[Event] = [("message_start", {"type": "message_start", "message": start})]
    events.append(("ping", {"type": "ping"}))
    chunks_left = list(text_chunks) if text_chunks is not None else None
    for index, block in enumerate(body.get("content") or []):
        kind = block["type"]
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            if chunks_left is not None:
                pieces, chunks_left = chunks_left, None
            else:
                half = len(block["text"]) // 2
                pieces = [p for p in (block["text"][:half], block["text"][half:]) if p]
            deltas = [{"type": "text_delta", "text": p} for p in pieces]
        elif kind == "tool_use":
            opening = {**block, "input": {}}
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                {"type": "input_json_delta", "partial_json": raw[i : i + 10]}
                for i in range(0, len(raw), 10)
            ]
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block.get("signature", "sig")},
            ]
        else:
            raise ValueError(f"AnthropicStub cannot stream a {kind!r} block.")
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that does not report clients dropping their connections."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client closing a kept-alive connection is normal here (tests close clients)."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@dataclass(frozen=True)
class _Reply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    text_chunks: tuple[str, ...] | None = None
    events: tuple[Event, ...] | None = None
    event_delay: float = 0.0
    hang_up: bool = False


class AnthropicStub(ScriptedServer[_Reply, RecordedRequest]):
    """Anthropic's Messages API on 127.0.0.1, answering from a FIFO of scripted replies."""

    def __init__(self) -> None:
        super().__init__()
        #: Set when a client dropped a stream before its last event.
        self.abandoned = threading.Event()
        #: Set when a stream was written to its end.
        self.stream_finished = threading.Event()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    def _make_server(self, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
        return _Server(("127.0.0.1", 0), handler)

    @property
    def base_url(self) -> str:
        """The stub's root URL, for `Claude(base_url=...)` or `ANTHROPIC_BASE_URL`."""
        return self.root_url

    def reply_text(self, text: str, **kwargs: Any) -> None:
        """Answer the next request with a text message (`message()` keyword arguments)."""
        self.reply_message(message([text_block(text)], **kwargs))

    def reply_tool_use(self, *calls: tuple[str, str, dict[str, Any]], text: str = "") -> None:
        """Answer the next request with `tool_use` blocks: (id, name, input) per call."""
        blocks = [text_block(text)] if text else []
        blocks += [tool_use_block(i, n, a) for i, n, a in calls]
        self.reply_message(message(blocks, stop_reason="tool_use"))

    def reply_message(self, body: dict[str, Any], *, event_delay: float = 0.0) -> None:
        """Answer the next request with this Message (streamed as events if it asks to)."""
        self._enqueue(_Reply(status=200, body=body, event_delay=event_delay))

    def reply_stream(self, chunks: list[str], *, event_delay: float = 0.0, **kwargs: Any) -> None:
        """Answer the next (streaming) request with one text delta per chunk."""
        body = message([text_block("".join(chunks))], **kwargs)
        self._enqueue(
            _Reply(status=200, body=body, text_chunks=tuple(chunks), event_delay=event_delay)
        )

    def reply_events(
        self, events: list[Event], *, event_delay: float = 0.0, hang_up: bool = False
    ) -> None:
        """Answer the next (streaming) request with exactly these server-sent events.

        `hang_up`: then close the connection without ending the response (a dropped stream).
        """
        reply = _Reply(
            status=200, body={}, events=tuple(events), event_delay=event_delay, hang_up=hang_up
        )
        self._enqueue(reply)

    def reply_error(
        self,
        status: int,
        text: str,
        *,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next `times` requests with the API's error body (and these headers)."""
        kind = error_type or _ERROR_TYPES.get(status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": text}}
        for _ in range(times):
            self._enqueue(_Reply(status=status, body=body, headers=dict(headers or {})))


def _handler_for(stub: AnthropicStub) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to `stub`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if path != "/v1/messages":
                self._send_error(404, "not_found_error", f"AnthropicStub has no route {path}.")
                return
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                self._send_error(400, "invalid_request_error", "The body is not JSON.")
                return
            stream = bool(body.get("stream"))
            reply = stub._next_reply(
                RecordedRequest(
                    method="POST",
                    path=path,
                    stream=stream,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    received_at=time.monotonic(),
                )
            )
            if reply is None:
                self._send_error(500, "api_error", "AnthropicStub has no scripted reply left.")
            elif reply.events is not None:
                self._send_sse(list(reply.events), reply.event_delay, hang_up=reply.hang_up)
            elif reply.status != 200 or not stream:
                self._send_json(reply.status, reply.body, reply.headers)
            else:
                chunks = list(reply.text_chunks) if reply.text_chunks is not None else None
                self._send_sse(stream_events(reply.body, chunks), reply.event_delay)

        def _send_error(self, status: int, kind: str, text: str) -> None:
            body = {"type": "error", "error": {"type": kind, "message": text}}
            self._send_json(status, body, {})

        def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", "req_stub")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _send_sse(self, events: list[Event], delay: float, *, hang_up: bool = False) -> None:
            """Write each event as its own HTTP chunk; note a client that went away."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("request-id", "req_stub")
            self.end_headers()
            try:
                for name, data in events:
                    frame = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    self.wfile.flush()
                    if delay:
                        time.sleep(delay)
                if hang_up:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                stub.abandoned.set()
                self.close_connection = True
                return
            stub.stream_finished.set()

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

    return Handler
