"""LISTEN/NOTIFY for SQLite: notifications between the processes of one machine that share a
database file, as Unix datagrams.

PostgreSQL tells every listening process when a session was freed, an invocation committed
events or was asked to stop (`app.db.notifications`). SQLite has no such thing, and its
processes can only be on one machine (they share the file), so each process that listens binds
a datagram socket in a directory named after the database file, and a notification is one
datagram to every socket there. Sending costs a directory listing and one `sendto` per process
(tens of microseconds); nothing is sent when no process listens.

Like PostgreSQL's, these are hints: whoever hears one reads the database before acting, and a
lost one (a receiver whose buffer is full, one that was not yet listening) only delays the work
until the listener's fallback (a poll, a timer) finds it. The directory (mode 0700) lives in the
system's temporary folder under a hash of the database's real path, because a socket path must
fit in 107 bytes; a socket left by a dead process is removed by the first send that finds it.

A notification sent inside a write unit must leave only once the unit committed, or a listener
could read the database before the commit and go back to sleep: `after_commit` queues it for the
unit of work (`app.db.uow`), which sends it after the COMMIT.
"""

import asyncio
import contextlib
import errno
import hashlib
import logging
import os
import socket
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path

logger = logging.getLogger("agentd.db")

#: Notifications queued by the write unit running in this context: (channel, payload).
_pending: ContextVar[list[tuple[str, str]] | None] = ContextVar("agentd_after_commit", default=None)

_SUFFIX = ".sock"
#: The separator between a datagram's channel and its payload.
_SEP = b"\x00"


def notify_directory(database_path: str | os.PathLike[str]) -> Path:
    """Where the processes of the database at `database_path` listen."""
    real = os.path.realpath(database_path)
    digest = hashlib.sha256(real.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"agentd-notify-{digest}"


@contextlib.contextmanager
def collecting() -> Iterator[list[tuple[str, str]]]:
    """Collect what `after_commit` queues in the enclosed block (one write unit)."""
    pending: list[tuple[str, str]] = []
    token = _pending.set(pending)
    try:
        yield pending
    finally:
        _pending.reset(token)


def after_commit(channel: str, payload: str) -> None:
    """Queue a notification for when the current write unit commits (dropped if it does not,
    and when no unit is running, since nothing would send it)."""
    pending = _pending.get()
    if pending is not None:
        pending.append((channel, payload))


class _Sender:
    """One unbound, non-blocking datagram socket for the whole process."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = None

    def send(self, directory: Path, notices: list[tuple[str, str]], *, skip: str = "") -> None:
        try:
            names = [n for n in os.listdir(directory) if n.endswith(_SUFFIX) and n != skip]
        except OSError:  # nobody listens on this database
            return
        if not names:
            return
        if self._socket is None:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._socket.setblocking(False)
        datagrams = [channel.encode() + _SEP + payload.encode() for channel, payload in notices]
        for name in names:
            path = str(directory / name)
            for datagram in datagrams:
                try:
                    self._socket.sendto(datagram, path)
                except (ConnectionRefusedError, FileNotFoundError):
                    with contextlib.suppress(OSError):  # its process died: nobody reads it
                        os.unlink(path)
                    break
                except OSError as exc:
                    # A full receiver (EAGAIN) or an oversized payload: the hint is lost, the
                    # receiver's fallback covers it.
                    if exc.errno not in (errno.EAGAIN, errno.EMSGSIZE, errno.ENOBUFS):
                        logger.debug("notification to %s not sent: %s", path, exc)
                    break


_sender = _Sender()


def send(directory: Path, notices: list[tuple[str, str]], *, skip: str = "") -> None:
    """Send each (channel, payload) to every process listening in `directory` (but `skip`,
    a socket's name)."""
    if notices:
        _sender.send(directory, notices, skip=skip)


class LocalListener:
    """Listens in `directory` between `start` and `stop`, handing each channel's payloads to
    its callback on the event loop (like `PostgresListener`, whose interface it mirrors)."""

    def __init__(
        self,
        directory: Path,
        callbacks: Mapping[str, Callable[[str], None]],
        *,
        on_connect: Callable[[], None],
    ) -> None:
        self.directory = directory
        self._callbacks = {channel.encode(): callback for channel, callback in callbacks.items()}
        self._on_connect = on_connect
        self.name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}{_SUFFIX}"
        self._socket: socket.socket | None = None
        self.connects = 0

    async def start(self) -> None:
        """Bind this process's socket and start reading. A folder this process may not use
        (another user's) leaves it not listening, as on a database without notifications:
        its waits fall back to their polls."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self.directory.mkdir(mode=0o700, exist_ok=True)
            sock.setblocking(False)
            # Room for bursts (a run's events, many ends at once) before a sender drops one.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            sock.bind(str(self.directory / self.name))
        except OSError as exc:
            sock.close()
            logger.warning("not listening for other processes' notifications: %s", exc)
            return
        self._socket = sock
        asyncio.get_running_loop().add_reader(sock.fileno(), self._read)
        self.connects += 1
        self._on_connect()

    def _read(self) -> None:
        sock = self._socket
        if sock is None:
            return
        while True:
            try:
                datagram = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            channel, _, payload = datagram.partition(_SEP)
            callback = self._callbacks.get(channel)
            if callback is None:
                continue
            try:
                callback(payload.decode())
            except Exception:
                logger.exception("a notification's callback failed")

    def notify(self, notices: list[tuple[str, str]]) -> None:
        """Send to the other processes listening on this database."""
        send(self.directory, notices, skip=self.name)

    async def stop(self) -> None:
        """Stop reading and remove this process's socket."""
        sock, self._socket = self._socket, None
        if sock is None:
            return
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(sock.fileno())
        sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.directory / self.name)


__all__ = [
    "LocalListener",
    "after_commit",
    "collecting",
    "notify_directory",
    "send",
]
