"""HistoryCache: parsed events of recently used sessions, so a turn parses only new events."""

from collections import OrderedDict

from app.sessions.models import Event


class HistoryCache:
    """Parsed events of recently used sessions, bounded by a total number of events (LRU).

    Events never change once stored, so a cached prefix stays true; entries are keyed by the
    session's primary key and creation time, so a deleted and re-created session (SQLite may
    reuse the key) never sees the old history. Per process; each replica warms its own.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[tuple[int, float], list[Event]] = OrderedDict()
        self._size = 0

    def get(self, key: tuple[int, float], last_seq: int) -> list[Event] | None:
        """The cached prefix of the session's history (None if absent or inconsistent)."""
        events = self._entries.get(key)
        if not events or (events[-1].seq or 0) > last_seq:
            return None
        self._entries.move_to_end(key)
        return events

    def put(self, key: tuple[int, float], events: list[Event]) -> None:
        """Remember `events` as the session's history, evicting the least recently used."""
        self._size -= len(self._entries.pop(key, []))
        if not events or len(events) > self.budget:
            return
        self._entries[key] = events
        self._size += len(events)
        self._evict()

    def extend(self, key: tuple[int, float], event: Event) -> None:
        """Append a just-committed event if the cached history ends right before it.

        In place: every appended event passes here, and the cached list is the cache's own
        (readers get copies), so re-copying the whole history per event would be O(history).
        """
        events = self._entries.get(key)
        if not events or (events[-1].seq or 0) + 1 != event.seq:
            return
        events.append(event)
        self._size += 1
        self._entries.move_to_end(key)
        self._evict()

    def _evict(self) -> None:
        """Drop least recently used sessions until the cache is within its budget."""
        while self._size > self.budget:
            _, evicted = self._entries.popitem(last=False)
            self._size -= len(evicted)
