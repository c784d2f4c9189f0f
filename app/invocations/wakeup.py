"""Queued runs of this process waiting for their session, and waking them when it may be free.

An `enqueue` run whose session is busy waits here instead of sleeping blindly. Whoever learns
that a session may have become free calls `wake(session_pk)`: the manager right after one of its
invocations of that session ended (its lease released, or a queued one gave up or was
rejected), and on PostgreSQL the listener for another replica's release. Only the session's
oldest local waiter is woken, because the lease goes first come, first served (the store's
`oldest_queued` rule, ordered by create time then id, the order kept here too): a younger
waiter could not take it anyway, and when the oldest leaves the queue (it ran, or gave up) the
manager wakes the session again, so the next one tries. A wake that arrives while the waiter is
busy trying is kept, not lost: its next wait returns at once.
"""

import asyncio
import bisect
import contextlib
from collections.abc import Iterator
from typing import Literal

#: Why a waiter stopped waiting: woken by `wake` (`release`: this replica; `notification`:
#: another replica's release, through the database), by `wake_all` (`reconnect`: notifications
#: may have been missed), or its poll interval ran out (`poll`).
WakeCause = Literal["release", "notification", "reconnect", "poll"]


class Waiter:
    """One queued run's place in its session's line."""

    def __init__(self, order: tuple[float, str]) -> None:
        self.order = order
        self._woken = asyncio.Event()
        self._cause: WakeCause = "poll"

    def wake(self, cause: WakeCause) -> None:
        """Let the waiter try now (or as soon as its current try fails)."""
        self._cause = cause
        self._woken.set()

    async def wait(self, timeout: float) -> WakeCause:
        """Wait until woken or `timeout` seconds passed; why it returned."""
        try:
            async with asyncio.timeout(timeout):
                await self._woken.wait()
        except TimeoutError:
            return "poll"
        # No await between the event firing and here, so no wake can slip in and be cleared.
        self._woken.clear()
        return self._cause


class SessionWaiters:
    """The waiting queued runs of this process, by session, oldest first."""

    def __init__(self) -> None:
        self._lines: dict[int, list[Waiter]] = {}

    @contextlib.contextmanager
    def waiting(self, session_pk: int, order: tuple[float, str]) -> Iterator[Waiter]:
        """Stand in the session's line while the block runs; `order` is (create time, id)."""
        waiter = Waiter(order)
        line = self._lines.setdefault(session_pk, [])
        bisect.insort(line, waiter, key=lambda w: w.order)
        try:
            yield waiter
        finally:
            line.remove(waiter)
            if not line:
                del self._lines[session_pk]

    def wake(self, session_pk: int, cause: WakeCause = "release") -> None:
        """Let the session's oldest waiter here try for its lease now."""
        line = self._lines.get(session_pk)
        if line:
            line[0].wake(cause)

    def wake_all(self) -> None:
        """Wake the oldest waiter of every session (after wake-ups may have been missed)."""
        for line in self._lines.values():
            line[0].wake("reconnect")


__all__ = ["SessionWaiters", "Waiter", "WakeCause"]
