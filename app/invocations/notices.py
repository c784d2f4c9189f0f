"""PostgreSQL notifications between processes, over one listening connection.

Three channels: `SESSION_FREE_CHANNEL` (a session may have work for any process: a run ended,
was handed back, or was queued for workers; sent by the units that do so), `EVENTS_CHANNEL` (an
invocation committed events or ended: its followers elsewhere may read on) and `FOLLOW_CHANNEL`
(a process follows an invocation: the process running it should publish its events). On SQLite
nothing is heard or sent; callers fall back to polling.
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from app.db.notifications import PostgresListener
from app.db.repositories.invocations import SESSION_FREE_CHANNEL, parse_session_free

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

#: PostgreSQL channels, each payload an invocation id: it committed events or ended; a process
#: follows its events (the process running it then publishes them).
EVENTS_CHANNEL = "agentd_invocation_events"
FOLLOW_CHANNEL = "agentd_invocation_follow"


class StoreNotices:
    """Listening for other processes' notifications, and sending this process's own."""

    def __init__(self, db_engine: "AsyncEngine", dialect: str) -> None:
        self._db_engine = db_engine
        self._dialect = dialect
        self._listener: PostgresListener | None = None

    async def listen(
        self,
        on_free: Callable[[int, str], None],
        *,
        on_connect: Callable[[], None],
        on_events: Callable[[str], None] | None = None,
        on_follow: Callable[[str], None] | None = None,
    ) -> None:
        """On PostgreSQL, call `on_free(session_pk, owner)` each time any replica ends an
        invocation (`owner` is that replica), and `on_events(invocation_id)` /
        `on_follow(invocation_id)` for what `notify` sends; elsewhere do nothing.

        Args:
            on_free: runs on the event loop for every notification; keep it short.
            on_connect: runs whenever listening (re)starts: what was sent while the connection
                was down is lost, so the caller should act as if every session may be free.
            on_events: an invocation committed events or ended (its readers may read on).
            on_follow: a process follows an invocation's events (its runner should publish them).
        """
        if self._dialect != "postgresql" or self._listener is not None:
            return

        def deliver(payload: str) -> None:
            on_free(*parse_session_free(payload))

        also = {
            channel: callback
            for channel, callback in ((EVENTS_CHANNEL, on_events), (FOLLOW_CHANNEL, on_follow))
            if callback is not None
        }
        self._listener = PostgresListener(
            self._db_engine,
            SESSION_FREE_CHANNEL,
            on_notify=deliver,
            on_connect=on_connect,
            also=also,
        )
        await self._listener.start()

    @property
    def listening(self) -> bool:
        """Whether notifications can be heard (PostgreSQL, connected at least once)."""
        return self._listener is not None and self._listener.connects > 0

    async def notify(self, channel: str, invocation_ids: Sequence[str]) -> bool:
        """Notify `channel` (EVENTS_CHANNEL or FOLLOW_CHANNEL) once per invocation id, on the
        listening connection; whether it was sent (never on SQLite)."""
        if self._listener is None:
            return False
        return await self._listener.notify(channel, invocation_ids)

    async def stop(self) -> None:
        """Stop what `listen` started."""
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None


__all__ = ["EVENTS_CHANNEL", "FOLLOW_CHANNEL", "StoreNotices"]
