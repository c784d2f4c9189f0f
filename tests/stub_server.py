"""The part every local provider stub shares: an HTTP server on 127.0.0.1 in a background
thread that answers from a FIFO of scripted replies and records every request it gets.

The socket is bound when the stub starts, so a test can call it at once without polling for
readiness. A stub subclass says how requests are handled (`_handler`) and how its replies and
recorded requests look; the provider's wire format lives there, not here.
"""

import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Generic, Self, TypeVar

ReplyT = TypeVar("ReplyT")
RequestT = TypeVar("RequestT")


class ScriptedServer(Generic[ReplyT, RequestT]):
    """A scripted HTTP server; `with Stub() as stub:` starts and stops it."""

    def __init__(self) -> None:
        self.requests: list[RequestT] = []
        self._replies: deque[ReplyT] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class bound to this stub."""
        raise NotImplementedError

    def _make_server(self, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        return server

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:<port>` of the running stub."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started.")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        """Bind a free port and serve in a background thread."""
        if self._server is not None:
            return self
        self._server = self._make_server(self._handler())
        # A short poll interval keeps stop() (which waits for the next poll) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._replies)

    def _enqueue(self, reply: ReplyT) -> None:
        with self._lock:
            self._replies.append(reply)

    def _next_reply(self, request: RequestT) -> ReplyT | None:
        with self._lock:
            self.requests.append(request)
            return self._replies.popleft() if self._replies else None
