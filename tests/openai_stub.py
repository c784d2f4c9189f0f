"""A local stand-in for an OpenAI Chat Completions server, so tests drive the real `openai` SDK.

`OpenAIStub` serves `POST .../chat/completions` on 127.0.0.1 (any prefix: `/v1/...` as OpenAI,
vLLM and Ollama serve it, `/openai/deployments/<name>/...` as Azure does) from a FIFO of
scripted replies, and records every request it gets. A streamed reply is sent the way those
servers send it: `text/event-stream` in chunked transfer encoding, one `data: {json}\\n\\n` event
per chunk, then `data: [DONE]\\n\\n`; a reply can wait between events (a slow model), and the stub
records whether each stream was sent to its end or abandoned by the client (the connection
closed under it). Errors carry OpenAI's `{"error": {...}}` body and any headers (`retry-after`).
It uses the standard library's `ThreadingHTTPServer`: the socket is bound when the stub starts.

    with OpenAIStub() as stub:
        stub.reply_text("Hello!")
        llm = OpenAILlm(model="openai/gpt-4o-mini", api_key="x", base_url=stub.base_url)
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit

from tests.stub_server import ScriptedServer

MODEL = "gpt-stub"
USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}


class RecordedRequest(TypedDict):
    """One request the stub received."""

    path: str
    query: str
    headers: dict[str, str]
    body: dict[str, Any]


StreamOutcome = Literal["finished", "abandoned"]


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One entry of a message's `tool_calls`."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = MODEL,
    **message_fields: Any,
) -> dict[str, Any]:
    """A `chat.completion` JSON body."""
    message: dict[str, Any] = {"role": "assistant", "content": content, **message_fields}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage if usage is not None else USAGE,
    }


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = MODEL,
    no_choices: bool = False,
) -> dict[str, Any]:
    """A `chat.completion.chunk` JSON body (`no_choices`: the usage chunk, `choices: []`)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def text_chunks(
    pieces: list[str],
    *,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = MODEL,
) -> list[dict[str, Any]]:
    """OpenAI's stream of a text answer: role first, a delta per piece, the finish reason, and
    (as `stream_options.include_usage` asks) a last chunk with the usage and no choices."""
    events = [chunk({"role": "assistant", "content": ""}, model=model)]
    events += [chunk({"content": piece}, model=model) for piece in pieces]
    events.append(chunk({}, finish_reason=finish_reason, model=model))
    events.append(chunk(usage=usage or USAGE, model=model, no_choices=True))
    return events


def tool_call_chunks(
    calls: list[tuple[str, str, dict[str, Any]]], *, split: int = 4, model: str = MODEL
) -> list[dict[str, Any]]:
    """OpenAI's stream of tool calls: per call, a delta with its index, id and name, then its
    JSON arguments in pieces of `split` characters; then the finish reason and the usage."""
    events = [chunk({"role": "assistant", "content": None}, model=model)]
    for index, (call_id, name, args) in enumerate(calls):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}, model=model))
        arguments = json.dumps(args)
        for start in range(0, len(arguments), split):
            piece = {"index": index, "function": {"arguments": arguments[start : start + split]}}
            events.append(chunk({"tool_calls": [piece]}, model=model))
    events.append(chunk({}, finish_reason="tool_calls", model=model))
    events.append(chunk(usage=USAGE, model=model, no_choices=True))
    return events


@dataclass(frozen=True)
class _Reply:
    status: int
    body: dict[str, Any] | None = None
    events: tuple[dict[str, Any], ...] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    done: bool = True


@dataclass
class _Streams:
    outcomes: list[StreamOutcome] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)


class OpenAIStub(ScriptedServer[_Reply, RecordedRequest]):
    """A Chat Completions server on 127.0.0.1, answering from a FIFO of scripted replies."""

    def __init__(self) -> None:
        super().__init__()
        self._streams = _Streams()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    @property
    def base_url(self) -> str:
        """The `/v1` base URL, for `OpenAILlm(base_url=...)` or `OPENAI_BASE_URL`."""
        return f"{self.root_url}/v1"

    # -- scripting ----------------------------------------------------------------------------

    def reply_text(self, text: str, **fields: Any) -> None:
        """Answer the next request with text (a text stream if the request streams)."""
        body = completion(text, **fields)
        self._enqueue(_Reply(status=200, body=body))

    def reply_tool_calls(self, *calls: tuple[str, str, dict[str, Any]]) -> None:
        """Answer the next request with (id, name, args) tool calls (streamed if it streams)."""
        body = completion(
            None,
            tool_calls=[tool_call(i, n, a) for i, n, a in calls],
            finish_reason="tool_calls",
        )
        self._enqueue(_Reply(status=200, body=body))

    def reply_json(self, body: dict[str, Any], status: int = 200) -> None:
        """Answer the next request with this JSON body."""
        self._enqueue(_Reply(status=status, body=body))

    def reply_stream(
        self, events: list[dict[str, Any]], *, delay: float = 0.0, done: bool = True
    ) -> None:
        """Answer the next (streaming) request with these chunks, `delay` seconds apart, then
        `data: [DONE]` unless `done` is False."""
        self._enqueue(_Reply(status=200, events=tuple(events), delay=delay, done=done))

    def reply_error(
        self,
        status: int,
        message: str,
        *,
        error_type: str = "server_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next request with OpenAI's error body and these headers."""
        error = {"message": message, "type": error_type, "param": None, "code": code}
        self._enqueue(
            _Reply(
                status=status,
                body={"error": error},
                headers=tuple((headers or {}).items()),
            )
        )

    # -- streams --------------------------------------------------------------------------------

    @property
    def stream_outcomes(self) -> list[StreamOutcome]:
        """How each stream the stub sent ended, in order."""
        with self._streams.changed:
            return list(self._streams.outcomes)

    def wait_for_stream_end(self, count: int = 1, timeout: float = 10.0) -> list[StreamOutcome]:
        """Block until `count` streams have ended (sent through, or abandoned by the client)."""
        with self._streams.changed:
            self._streams.changed.wait_for(lambda: len(self._streams.outcomes) >= count, timeout)
            return list(self._streams.outcomes)

    def _stream_ended(self, outcome: StreamOutcome) -> None:
        with self._streams.changed:
            self._streams.outcomes.append(outcome)
            self._streams.changed.notify_all()


def _as_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole `chat.completion` body as the chunks a server would stream for it."""
    (choice,) = body["choices"]
    message = choice["message"]
    model = body.get("model", MODEL)
    if message.get("tool_calls"):
        calls = [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message["tool_calls"]
        ]
        return tool_call_chunks(calls, model=model)
    return text_chunks(
        [message.get("content") or ""],
        finish_reason=choice["finish_reason"],
        usage=body.get("usage"),
        model=model,
    )


def _handler_for(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to `stub`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not url.path.endswith("/chat/completions"):
                self._send_error(404, f"OpenAIStub has no route for {url.path}.")
                return
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                self._send_error(400, "OpenAIStub got a body that is not JSON.")
                return
            reply = stub._next_reply(
                RecordedRequest(
                    path=url.path,
                    query=url.query,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
            stream = bool(body.get("stream"))
            if reply is None:
                self._send_error(500, f"OpenAIStub has no scripted reply left for {url.path}.")
            elif reply.events is not None and not stream:
                self._send_error(500, "OpenAIStub's next reply is a stream but the call is not.")
            elif reply.events is not None:
                self._send_sse(reply, list(reply.events))
            elif stream and reply.status == 200 and reply.body is not None:
                self._send_sse(reply, _as_events(reply.body))
            else:
                self._send_json(reply.status, reply.body or {}, reply.headers)

        def _send_error(self, status: int, message: str) -> None:
            error = {"message": message, "type": "invalid_request_error", "param": None}
            self._send_json(status, {"error": error}, ())

        def _send_json(
            self, status: int, body: dict[str, Any], headers: tuple[tuple[str, str], ...]
        ) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _send_sse(self, reply: _Reply, events: list[dict[str, Any]]) -> None:
            """The events in chunked transfer encoding, as uvicorn-served vLLM sends them."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            frames = [f"data: {json.dumps(e)}\n\n" for e in events]
            if reply.done:
                frames.append("data: [DONE]\n\n")
            try:
                for index, frame in enumerate(frames):
                    if index and reply.delay:
                        time.sleep(reply.delay)
                    data = frame.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                self.close_connection = True
                stub._stream_ended("abandoned")
                return
            stub._stream_ended("finished")

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

    return Handler
