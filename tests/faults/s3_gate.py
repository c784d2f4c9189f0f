"""A TCP front for the S3 test server that a fault test can close, stall and open again.

The agentd process under test talks to S3 through this gate, never to moto directly, so that:

- `close()` is S3 stopped, as the client sees it: the port refuses connections and every open
  connection is reset. (Stopping moto's threaded server itself would not do: its keep-alive
  handler threads go on answering pooled connections, and a new moto would start empty.)
- `stall()` is an S3 that accepts connections and never answers: connections are accepted and
  held silently, nothing is read or sent.
- `open()` forwards every connection to moto again, which kept its buckets all along.
"""

import socket
import struct
import threading
from enum import Enum


class Mode(Enum):
    """What the gate does with a connection."""

    FORWARD = "forward"
    STALL = "stall"


class S3Gate:
    """Listens on 127.0.0.1:`port` and forwards to `target`, or refuses, or stalls."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._mode = Mode.FORWARD
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        probe = socket.create_server(("127.0.0.1", 0))
        self.port: int = probe.getsockname()[1]
        probe.close()

    @property
    def url(self) -> str:
        """The endpoint URL agentd is given."""
        return f"http://127.0.0.1:{self.port}"

    def open(self) -> None:
        """Listen (again) and forward every new connection to the S3 server."""
        self._listen(Mode.FORWARD)

    def stall(self) -> None:
        """Keep listening, but hold new connections without ever answering; reset open ones."""
        self._listen(Mode.STALL)

    def close(self) -> None:
        """Stop listening (connections are refused) and reset every open connection."""
        with self._lock:
            if self._listener is not None:
                # shutdown wakes the thread blocked in accept(); close alone may not.
                try:
                    self._listener.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                self._listener.close()
                self._listener = None
            self._reset_connections()

    def _listen(self, mode: Mode) -> None:
        with self._lock:
            self._mode = mode
            self._reset_connections()
            if self._listener is None:
                listener = socket.create_server(("127.0.0.1", self.port))
                self._listener = listener
                threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _reset_connections(self) -> None:
        for sock in self._sockets:
            # Linger 0: close sends RST, so the client sees the connection die at once.
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            sock.close()
        self._sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # the listener was closed
                return
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    return
                self._sockets.add(client)
                if self._mode is Mode.STALL:
                    continue  # held open, never read, never answered
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self._target)
        except OSError:
            client.close()
            return
        with self._lock:
            self._sockets.add(upstream)
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
        self._pipe(client, upstream)

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            # Either side ending ends both: shutdown wakes the other direction's recv.
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            with self._lock:
                for sock in (source, sink):
                    self._sockets.discard(sock)
                    sock.close()
