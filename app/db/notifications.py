"""PostgreSQL LISTEN: one dedicated connection that hands channels' notifications to callbacks,
and sends this process's own notifications (`notify`) off the pool's connections.

The connection is asyncpg's own, not borrowed from the engine's pool: a LISTEN holds its
connection for the life of the process, so a pooled one would shrink the pool for good and be
subject to its recycling. It is opened with the arguments the engine's dialect derives from the
URL (`create_connect_args`), so host, port, credentials and query options such as `ssl` are
read exactly as for the pool; its `application_name` names the channel.

A notification sent while the connection is down is lost for good. So after every connect
(the first included) `on_connect` is called, and the caller treats it as "anything may have
happened meanwhile"; a dropped connection is retried with a capped backoff, and one that died
without the server closing it (a network partition) is found by a ping every `PING_SECONDS`.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# asyncpg ships no type information (asyncpg-stubs would add it as a dev dependency).
import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import AsyncEngine

logger = logging.getLogger("agentd.db")

#: How often the idle listening connection is checked (and how long the check may take).
PING_SECONDS = 15.0
#: How long closing may take (on stop: shutdown must not wait on an unreachable server).
CLOSE_SECONDS = 1.0
#: The first wait before reconnecting; it doubles up to `MAX_RECONNECT_SECONDS` while the
#: database stays unreachable, and starts over after a successful connect.
RECONNECT_SECONDS = 0.5
MAX_RECONNECT_SECONDS = 10.0

# Connect arguments that SQLAlchemy's asyncpg dialect consumes itself (not asyncpg.connect's).
_DIALECT_ONLY = ("prepared_statement_cache_size", "prepared_statement_name_func")


class PostgresListener:
    """LISTENs on `channel` between `start` and `stop`.

    Args:
        on_notify: called with each notification's payload, on the event loop; keep it short.
        on_connect: called after each (re)connect, once the LISTEN is in place.
        also: more channels to listen on, each with its own `on_notify`.
    """

    def __init__(
        self,
        db_engine: AsyncEngine,
        channel: str,
        *,
        on_notify: Callable[[str], None],
        on_connect: Callable[[], None],
        also: Mapping[str, Callable[[str], None]] | None = None,
    ) -> None:
        _, params = db_engine.dialect.create_connect_args(db_engine.url)
        self._connect_args: dict[str, Any] = {
            k: v for k, v in params.items() if k not in _DIALECT_ONLY
        }
        # Named, so that pg_stat_activity tells this connection from the pool's.
        self._connect_args["server_settings"] = {
            "application_name": f"agentd listen {channel}",
            **(self._connect_args.get("server_settings") or {}),
        }
        self._channel = channel
        self._callbacks = {channel: on_notify, **(also or {})}
        self._on_connect = on_connect
        self._task: asyncio.Task[None] | None = None
        self._connection: Any = None
        #: One statement at a time on the connection (asyncpg runs no two at once).
        self._lock = asyncio.Lock()
        #: Notifications received (tests and debugging read it).
        self.received = 0
        #: Connects that put the LISTEN in place, the first included.
        self.connects = 0

    async def start(self) -> None:
        """Start listening; returns after the first connect attempt (a failed one is retried)."""
        attempted = asyncio.Event()
        self._task = asyncio.create_task(self._run(attempted), name=f"listen {self._channel}")
        await attempted.wait()

    async def stop(self) -> None:
        """Stop listening and close the connection."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self, attempted: asyncio.Event) -> None:
        delay = RECONNECT_SECONDS
        while True:
            try:
                await self._listen(attempted)
                logger.warning("the LISTEN connection for %s was closed", self._channel)
                delay = RECONNECT_SECONDS
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                logger.warning("cannot LISTEN for %s: %s", self._channel, exc)
            finally:
                attempted.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_RECONNECT_SECONDS)

    async def _listen(self, attempted: asyncio.Event) -> None:
        """One connection's life: connect, LISTEN, return once it is closed (raise if broken)."""
        connection = await asyncpg.connect(**{"timeout": PING_SECONDS, **self._connect_args})
        try:
            lost = asyncio.Event()
            connection.add_termination_listener(lambda _connection: lost.set())
            for channel in self._callbacks:
                await connection.add_listener(channel, self._deliver)
            self._connection = connection
            self.connects += 1
            attempted.set()
            self._on_connect()
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(PING_SECONDS):
                        await lost.wait()
                    return
                async with self._lock:
                    await connection.execute("SELECT 1", timeout=PING_SECONDS)
        finally:
            self._connection = None
            if not connection.is_closed():
                # Also on stop (cancelled): close politely, so the server logs no lost client.
                with contextlib.suppress(Exception):
                    await asyncio.shield(connection.close(timeout=CLOSE_SECONDS))

    async def notify(self, channel: str, payloads: Sequence[str]) -> bool:
        """Send one notification per payload on `channel`, in one statement, on this
        connection; whether it was sent (not while disconnected: the caller's fallback, such
        as its readers' polling, covers that)."""
        connection = self._connection
        if connection is None or not payloads:
            return False
        try:
            async with self._lock:
                await connection.execute(
                    "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p",
                    channel,
                    list(payloads),
                    timeout=PING_SECONDS,
                )
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            logger.warning("cannot NOTIFY %s: %s", channel, exc)
            return False
        return True

    def _deliver(self, _connection: Any, _pid: int, channel: str, payload: str) -> None:
        self.received += 1
        try:
            self._callbacks[channel](payload)
        except Exception:  # a bad payload must not stop the listener
            logger.exception("handling a notification on %s failed", channel)


__all__ = ["PostgresListener"]
