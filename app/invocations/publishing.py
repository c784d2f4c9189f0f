"""Publishing an invocation's committed events to the processes that follow it elsewhere
(PostgreSQL).

The process running an invocation publishes that it committed events on EVENTS_CHANNEL when
someone elsewhere may be reading them: always for a run it claimed from the queue (its clients
are on API replicas), and for other runs once a follower elsewhere asks on FOLLOW_CHANNEL.
Publications are batched: one `pg_notify` statement for every invocation with news since the
last one. A follower waits on its own wake-up (`Followers.following`), set by a publication
for its invocation or by a reconnect of the listening connection (what was sent meanwhile is
lost); it reads the log on a timer when none comes.
"""

import asyncio
import contextlib
import logging
from collections.abc import Iterator

from app.invocations.notices import EVENTS_CHANNEL, StoreNotices

logger = logging.getLogger("agentd.invocations")


class EventPublisher:
    """Batches this process's publications and sends them from a task of its own."""

    def __init__(self, notices: StoreNotices) -> None:
        self._notices = notices
        self._pending: set[str] = set()
        self._wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._send_forever(), name="agentd-event-publisher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def publish(self, invocation_id: str) -> None:
        """Publish (soon, batched) that `invocation_id` committed events or ended."""
        self._pending.add(invocation_id)
        self._wanted.set()

    async def _send_forever(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            batch, self._pending = sorted(self._pending), set()
            try:
                await self._notices.notify(EVENTS_CHANNEL, batch)
            except Exception:  # followers fall back to reading on a timer
                logger.exception("publishing events failed")


class Followers:
    """This process's followers of runs elsewhere, each with a wake-up."""

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    @contextlib.contextmanager
    def following(self, invocation_id: str) -> Iterator[asyncio.Event]:
        """A wake-up set whenever `invocation_id` is published, while the block runs."""
        woken = asyncio.Event()
        self._waiting.setdefault(invocation_id, set()).add(woken)
        try:
            yield woken
        finally:
            waiters = self._waiting.get(invocation_id)
            if waiters is not None:
                waiters.discard(woken)
                if not waiters:
                    del self._waiting[invocation_id]

    def wake(self, invocation_id: str) -> None:
        for waiter in self._waiting.get(invocation_id, ()):
            waiter.set()

    def wake_all(self) -> None:
        for waiters in self._waiting.values():
            for waiter in waiters:
                waiter.set()
