"""Following a run: its events as they come, its end, and the events of the run a handle started.

A run in this process is followed through its channel (`RunChannel`); a run elsewhere (another
process, or another attempt after this process let it go) through the database: each time the
process running it publishes new events (PostgreSQL, asked for once on FOLLOW_CHANNEL), and on a
timer for what no publication covers (SQLite; a lost notification).
"""

import asyncio
from collections.abc import AsyncIterator

from app.invocations.channel import StreamItem
from app.invocations.models import Invocation
from app.invocations.notices import FOLLOW_CHANNEL
from app.invocations.publishing import Followers
from app.invocations.run_state import RunHandle
from app.invocations.run_task import RunTasks
from app.invocations.store import InvocationStore
from app.observability.metrics import follow_woken
from app.sessions.models import Event

#: How often a follower of a run on another replica reads new events without notifications
#: (SQLite), and how long it waits for one before reading anyway (PostgreSQL).
REMOTE_POLL_SECONDS = 0.25
REMOTE_FALLBACK_SECONDS = 2.0


class Following:
    """Feeds of runs, here or elsewhere, for followers and waiters."""

    def __init__(self, store: InvocationStore, followers: Followers, tasks: RunTasks) -> None:
        self._store = store
        self._followers = followers
        self._tasks = tasks

    async def follow(
        self, handle: RunHandle, *, after_seq: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """Events after `after_seq` (then live ones) until the invocation ends, then `done`.

        By default, the events of the run the handle started (of a resumed invocation: this run's).
        """
        last = handle.after_seq if after_seq is None else after_seq
        channel, resumed_after = handle.channel, handle.after_seq
        if channel is None and (run := self._tasks.get(handle.invocation.id)) is not None:
            channel, resumed_after = run.channel, run.resumed_after
        if channel is not None:
            if last < resumed_after:
                # Earlier runs of a resumed invocation: their events are only in the database.
                for event in await self._store.events(
                    handle.session_pk, handle.invocation.id, last
                ):
                    last = event.seq or last
                    yield StreamItem("event", event=event)
            async for item in channel.follow(last):
                if item.kind == "done" and not channel.ended_here:
                    break  # the run here let go of it (taken over, handed back): follow it there
                if item.kind == "event" and item.event is not None:
                    last = item.event.seq or last
                yield item
            else:
                return
        async for item in self._follow_stored(handle, last):
            yield item

    async def wait(self, handle: RunHandle) -> Invocation:
        """The invocation once it has ended (the run goes on if the waiter goes away)."""
        channel = handle.channel
        if channel is None and (run := self._tasks.get(handle.invocation.id)) is not None:
            channel = run.channel
        if channel is not None:
            final = await asyncio.shield(channel.wait_closed())
            if channel.ended_here:
                return final
        async for item in self._follow_stored(handle, handle.after_seq):
            if item.kind == "done" and item.invocation is not None:
                return item.invocation
        raise AssertionError("follow ended without done")  # pragma: no cover

    async def persisted_events(self, handle: RunHandle) -> list[Event]:
        """The persisted events of the run the handle started, from memory when it ran here."""
        channel = handle.channel
        if channel is not None and channel.closed and channel.ended_here:
            return channel.persisted()
        return await self._store.events(handle.session_pk, handle.invocation.id, handle.after_seq)

    async def _follow_stored(self, handle: RunHandle, last: int) -> AsyncIterator[StreamItem]:
        """Follow a run of another process (or attempt) through the database."""
        invocation_id = handle.invocation.id
        with self._followers.following(invocation_id) as woken:
            if self._store.notices.listening:
                await self._store.notices.notify(FOLLOW_CHANNEL, [invocation_id])
            while True:
                woken.clear()
                invocation = (await self._store.get(handle.ref, invocation_id)).invocation
                for event in await self._store.events(handle.session_pk, invocation_id, last):
                    last = event.seq or last
                    yield StreamItem("event", event=event)
                if invocation.status.terminal:
                    # Events committed just before the status changed are in the batch.
                    yield StreamItem("done", invocation=invocation)
                    return
                timeout = (
                    REMOTE_FALLBACK_SECONDS
                    if self._store.notices.listening
                    else REMOTE_POLL_SECONDS
                )
                try:
                    await asyncio.wait_for(woken.wait(), timeout=timeout)
                    follow_woken("notification")
                except TimeoutError:
                    follow_woken("timer")


__all__ = ["REMOTE_FALLBACK_SECONDS", "REMOTE_POLL_SECONDS", "Following"]
