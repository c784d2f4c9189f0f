"""RunChannel: the live feed of one invocation running in this process.

It keeps every event the run produced (persisted ones with their seq, and partial chunks) so any
number of followers can attach at any time: a follower replays what it missed (persisted events
after its Last-Event-ID) and then receives live events until the run ends.
"""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

from app.invocations.models import Invocation
from app.sessions.models import Event


@dataclass(frozen=True)
class StreamItem:
    """One thing a follower receives: an event, a partial event, or the end (with the outcome)."""

    kind: str  # "event" | "partial" | "done"
    event: Event | None = None
    invocation: Invocation | None = None


class RunChannel:
    """Append-only feed of one local run."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._final: Invocation | None = None
        self._ended_here = False
        self._changed = asyncio.Condition()

    @property
    def closed(self) -> bool:
        """Whether the run has ended."""
        return self._final is not None

    @property
    def ended_here(self) -> bool:
        """Whether the run ended in this process with its outcome recorded (not let go to
        another attempt: then its followers go on through the database)."""
        return self._ended_here

    def persisted(self) -> list[Event]:
        """The events of the run that were persisted, in order."""
        return [e for e in self._events if not e.partial]

    async def publish(self, event: Event) -> None:
        """Add an event the run produced."""
        async with self._changed:
            self._events.append(event)
            self._changed.notify_all()

    async def close(self, final: Invocation, *, ended_here: bool = True) -> None:
        """End the feed with the invocation's outcome; `ended_here` False: with the invocation
        as it stands after this process let it go (handed back, or taken over elsewhere)."""
        async with self._changed:
            self._final = final
            self._ended_here = ended_here
            self._changed.notify_all()

    async def wait_closed(self) -> Invocation:
        """The invocation's outcome, once the run ends."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._final is not None)
            assert self._final is not None
            return self._final

    def _has_news(self, seen: int) -> bool:
        return seen < len(self._events) or self._final is not None

    async def follow(self, after_seq: int = 0) -> AsyncIterator[StreamItem]:
        """Persisted events after `after_seq`, live partials from now on, then `done`."""
        index = 0
        live_from = len(self._events)
        while True:
            async with self._changed:
                await self._changed.wait_for(partial(self._has_news, index))
                batch = self._events[index:]
                final = self._final
            for offset, event in enumerate(batch, start=index):
                if event.partial:
                    if offset >= live_from:
                        yield StreamItem("partial", event=event)
                elif (event.seq or 0) > after_seq:
                    yield StreamItem("event", event=event)
            index += len(batch)
            if final is not None and index >= len(self._events):
                yield StreamItem("done", invocation=final)
                return
