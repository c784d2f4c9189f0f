"""HistoryCache: recently used sessions' events, compact for most, parsed for the hottest few.

A turn needs its session's whole history as `Event` objects, and parsing a long history again
on every turn would cost O(history). But a parsed event holds ~5 KB of pydantic objects against
the ~300-500 bytes of its stored JSON, and every one of those objects is something the cyclic GC
walks on a full collection. So the cache keeps two tiers:

- every cached session's events as their stored JSON bytes (`budget` events in all), which is
  what is left of a session between its turns once it is no longer among the hottest;
- the parsed `Event` lists of the `hot_sessions` most recently used sessions, so a chat's next
  turn parses only the events appended since (and the contents memo, which trusts the very same
  Event objects, stays valid).

A session that falls out of the hot tier is parsed again from its bytes (no database read) the
next time it runs. Events never change once stored, so a cached prefix stays true; entries are
keyed by the session's primary key and creation time, so a deleted and re-created session (SQLite
may reuse the key) never sees the old history. Per process; each replica warms its own.
"""

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from app.sessions.models import Event

Key = tuple[int, float]

#: Sessions whose events are kept parsed (the rest keep their stored JSON only).
HOT_SESSIONS = 32


@dataclass(slots=True)
class _Entry:
    """One session's cached history: events `first_seq`.. in order."""

    first_seq: int
    stored: list[bytes]  # each event's stored JSON, without its seq
    parsed: list[Event] | None  # the same events parsed, while the session is hot

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.stored) - 1


class HistoryCache:
    """Cached session histories, bounded by a total number of events (LRU) and by how many
    sessions keep theirs parsed."""

    def __init__(self, budget: int, *, hot_sessions: int = HOT_SESSIONS) -> None:
        self.budget = budget
        self.hot_sessions = hot_sessions
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._hot: OrderedDict[Key, None] = OrderedDict()
        self._size = 0

    def get(self, key: Key, last_seq: int) -> list[Event] | None:
        """The cached prefix of the session's history, parsed (None if absent or inconsistent).

        The list is the cache's own: callers copy it before handing it out.
        """
        entry = self._entries.get(key)
        if entry is None or not entry.stored or entry.last_seq > last_seq:
            return None
        self._entries.move_to_end(key)
        if entry.parsed is None:
            entry.parsed = [
                Event.from_stored(entry.first_seq + index, orjson.loads(stored))
                for index, stored in enumerate(entry.stored)
            ]
        self._touch_hot(key)
        return entry.parsed

    def grow(
        self, key: Key, events: list[Event], stored: Sequence[bytes], *, keep: int
    ) -> list[Event]:
        """The session's history once `events` (read after the prefix `get` returned, with
        `stored`, their stored JSON) follow it: at most its last `keep` events, parsed, and
        cached unless they alone exceed the budget. The list is the cache's own."""
        entry = self._entries.get(key)
        if (
            entry is None
            or entry.parsed is None
            or (events and entry.last_seq + 1 != events[0].seq)
        ):
            self._drop(key)
            entry = _Entry(events[0].seq or 1 if events else 1, [], [])
            self._entries[key] = entry
        assert entry.parsed is not None
        entry.stored.extend(stored)
        entry.parsed.extend(events)
        self._size += len(events)
        if len(entry.stored) > keep:
            cut = len(entry.stored) - keep
            del entry.stored[:cut]
            del entry.parsed[:cut]
            entry.first_seq += cut
            self._size -= cut
        parsed = entry.parsed
        if not entry.stored or len(entry.stored) > self.budget:
            self._drop(key)
            return parsed
        self._entries.move_to_end(key)
        self._touch_hot(key)
        self._evict()
        return parsed

    def extend(self, key: Key, event: Event, stored: bytes) -> None:
        """Append a just-committed event (and its stored JSON) if the cached history ends right
        before it.

        In place: every appended event passes here, and re-copying the whole history per event
        would be O(history).
        """
        entry = self._entries.get(key)
        if entry is None or not entry.stored or entry.last_seq + 1 != event.seq:
            return
        entry.stored.append(stored)
        if entry.parsed is not None:
            entry.parsed.append(event)
        self._size += 1
        self._entries.move_to_end(key)
        self._evict()

    def _touch_hot(self, key: Key) -> None:
        self._hot[key] = None
        self._hot.move_to_end(key)
        while len(self._hot) > self.hot_sessions:
            cooled, _ = self._hot.popitem(last=False)
            entry = self._entries.get(cooled)
            if entry is not None:
                entry.parsed = None

    def _drop(self, key: Key) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._size -= len(entry.stored)
        self._hot.pop(key, None)

    def _evict(self) -> None:
        """Drop least recently used sessions until the cache is within its budget."""
        while self._size > self.budget:
            key = next(iter(self._entries))
            self._drop(key)
