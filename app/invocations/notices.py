"""Notifications between processes: PostgreSQL's LISTEN/NOTIFY over one listening connection,
or on SQLite datagrams between the processes that share the file (`app.db.local_notify`).

Four channels: `SESSION_FREE_CHANNEL` (a session may have work for any process: a run ended,
was handed back, or was queued for workers; sent by the units that do so), `EVENTS_CHANNEL` (an
invocation committed events or ended: its followers elsewhere may read on), `FOLLOW_CHANNEL`
(a process follows an invocation: the process running it should publish its events) and
`CANCEL_CHANNEL` (an invocation was asked to stop: the process running it stops it now). All are
hints: callers read the database before acting and keep a fallback (a poll, a timer) for a
notification that never came (an in-memory SQLite database notifies nothing).
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from app.db.local_notify import LocalListener
from app.db.notifications import PostgresListener
from app.db.repositories.invocations import SESSION_FREE_CHANNEL, parse_session_free
from app.db.uow import local_notify_directory

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

#: PostgreSQL channels, each payload an invocation id: it committed events or ended; a process
#: follows its events (the process running it then publishes them).
EVENTS_CHANNEL = "agentd_invocation_events"
FOLLOW_CHANNEL = "agentd_invocation_follow"
#: An invocation was asked to stop (payload: its id): the process running it cancels it.
CANCEL_CHANNEL = "agentd_invocation_cancel"


class StoreNotices:
    """Listening for other processes' notifications, and sending this process's own."""

    def __init__(self, db_engine: "AsyncEngine", dialect: str) -> None:
        self._db_engine = db_engine
        self._dialect = dialect
        self._listener: PostgresListener | LocalListener | None = None

    async def listen(
        self,
        on_free: Callable[[int, str], None],
        *,
        on_connect: Callable[[], None],
        on_events: Callable[[str], None] | None = None,
        on_follow: Callable[[str], None] | None = None,
        on_cancel: Callable[[str], None] | None = None,
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
            on_cancel: an invocation was asked to stop (its runner should stop it now).
        """
        if self._listener is not None:
            return

        def deliver(payload: str) -> None:
            on_free(*parse_session_free(payload))

        also = {
            channel: callback
            for channel, callback in (
                (EVENTS_CHANNEL, on_events),
                (FOLLOW_CHANNEL, on_follow),
                (CANCEL_CHANNEL, on_cancel),
            )
            if callback is not None
        }
        if self._dialect == "postgresql":
            self._listener = PostgresListener(
                self._db_engine,
                SESSION_FREE_CHANNEL,
                on_notify=deliver,
                on_connect=on_connect,
                also=also,
            )
        else:
            directory = local_notify_directory(self._db_engine)
            if directory is None:
                return
            self._listener = LocalListener(
                directory, {SESSION_FREE_CHANNEL: deliver, **also}, on_connect=on_connect
            )
        await self._listener.start()

    @property
    def listening(self) -> bool:
        """Whether notifications can be heard (PostgreSQL connected at least once, or an SQLite
        file's listener bound)."""
        return self._listener is not None and self._listener.connects > 0

    async def notify(self, channel: str, invocation_ids: Sequence[str]) -> bool:
        """Notify `channel` (EVENTS_CHANNEL, FOLLOW_CHANNEL or CANCEL_CHANNEL) once per
        invocation id to the other processes; whether it was sent."""
        if self._listener is None:
            return False
        if isinstance(self._listener, LocalListener):
            self._listener.notify([(channel, invocation_id) for invocation_id in invocation_ids])
            return True
        return await self._listener.notify(channel, invocation_ids)

    async def stop(self) -> None:
        """Stop what `listen` started."""
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None


__all__ = ["CANCEL_CHANNEL", "EVENTS_CHANNEL", "FOLLOW_CHANNEL", "StoreNotices"]
