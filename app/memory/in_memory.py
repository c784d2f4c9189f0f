"""MemoryService kept in process memory: for tests and embedded, single-process use.

It honours the same contract as the database service. A `threading.Lock` (not an asyncio one)
guards the dicts because one instance may be shared by event loops on different threads; it is
held only around synchronous dict work, never across an await. Entries are rebuilt from stored
JSON on every search, so callers can never mutate stored memories.
"""

import copy
import itertools
import threading
from dataclasses import dataclass

from app.memory.base import (
    BaseMemoryService,
    MemoryEntry,
    MemoryRecord,
    memory_entry,
    memory_records,
)
from app.sessions.models import Session

_UserKey = tuple[str, str]
_EventKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Stored:
    order: int
    record: MemoryRecord


class InMemoryMemoryService(BaseMemoryService):
    """Memories in dicts keyed by (app, user), then (session, event id)."""

    def __init__(self) -> None:
        self._entries: dict[_UserKey, dict[_EventKey, _Stored]] = {}
        self._order = itertools.count()
        self._lock = threading.Lock()

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's final text events; events already remembered are skipped."""
        # The records' JSON is freshly serialised, so it shares nothing with the caller's session.
        records = memory_records(session)
        if not records:
            return
        with self._lock:
            entries = self._entries.setdefault((session.app_name, session.user_id), {})
            for record in records:
                key = (session.id, record.event_id)
                if key not in entries:
                    entries[key] = _Stored(next(self._order), record)

    async def _search(
        self, *, app_name: str, user_id: str, words: list[str], limit: int
    ) -> list[MemoryEntry]:
        with self._lock:
            stored = list(self._entries.get((app_name, user_id), {}).values())
        matches = [s for s in stored if any(w in s.record.text for w in words)]
        matches.sort(key=lambda s: (s.record.timestamp, s.order), reverse=True)
        return [_entry(s.record) for s in matches[:limit]]


def _entry(record: MemoryRecord) -> MemoryEntry:
    # A deep copy: validation would otherwise share nested JSON (function call args) with the store.
    content = copy.deepcopy(record.content)
    return memory_entry(content, record.event_id, record.author, record.timestamp)
