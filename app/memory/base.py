"""The MemoryService port: recall of a user's past sessions by keyword, shaped like ADK's.

Every implementation passes the one contract suite in `tests/memory/test_memory_contract.py`.
Decisions where ADK is silent or loose, shared by every backend through the helpers here:
- Only final events whose content has text are remembered: partial (streaming) events, events
  without content and parts that are only function calls, blobs or model thoughts are skipped.
  The stored content is the event's whole content, as ADK returns it.
- Remembering is idempotent per (app, user, session, event id): adding a session again adds only
  the events not remembered yet, so a caller may add a session after every turn.
- Search is case-insensitive substring matching: an entry matches if its text contains any word
  (a run of letters, digits or `_`) of two or more characters of the query. At most
  `MAX_QUERY_WORDS` distinct words count; a query with none matches nothing. Results come from
  that app and user only, newest event first (ties: the later remembered first), at most `limit`.
- `MemoryEntry.timestamp` is ISO 8601 like ADK's, but in UTC with an explicit offset (ADK writes
  naive local time, which is ambiguous across replicas); `id` is the remembered event's id.
"""

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.genai import types
from pydantic import Field

from app.errors import UnstorableValue
from app.sessions.models import Event, Session
from app.wire import WireModel

#: Query words shorter than this are ignored (they would match nearly everything).
MIN_WORD_LENGTH = 2
#: Only the first this many distinct query words count, which bounds the cost of one search.
MAX_QUERY_WORDS = 32

_WORD = re.compile(r"\w+")


class MemoryEntry(WireModel):
    """One remembered piece of a past session (ADK's `MemoryEntry`)."""

    content: types.Content
    custom_metadata: dict[str, Any] | None = None
    id: str | None = None
    author: str | None = None
    timestamp: str | None = None


class SearchMemoryResponse(WireModel):
    """The entries matching a memory search, newest first."""

    memories: list[MemoryEntry] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One event prepared for storage: its searchable text and its content's JSON."""

    event_id: str
    author: str
    timestamp: float
    text: str
    content: dict[str, Any]


def format_timestamp(timestamp: float) -> str:
    """Epoch seconds as an ISO 8601 UTC time with offset."""
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat()


def memory_entry(
    content: dict[str, Any], event_id: str, author: str | None, timestamp: float
) -> MemoryEntry:
    """Build a wire entry from stored content JSON and the event's identity."""
    return MemoryEntry(
        content=types.Content.model_validate(content),
        id=event_id,
        author=author,
        timestamp=format_timestamp(timestamp),
    )


def searchable_text(content: types.Content | None) -> str:
    """The lower-cased text of the content's non-thought text parts ('' if none)."""
    if content is None or not content.parts:
        return ""
    texts = [part.text for part in content.parts if part.text and not part.thought]
    return "\n".join(texts).strip().lower()


def memory_record(event: Event) -> MemoryRecord | None:
    """The record to remember for `event`, or None if it has nothing to remember."""
    if event.partial or event.content is None:
        return None
    text = searchable_text(event.content)
    if not text:
        return None
    content = event.content.model_dump(mode="json", by_alias=True, exclude_none=True)
    try:
        # The databases reject NaN/Infinity in JSON; fail the same way on every backend.
        json.dumps(content, allow_nan=False)
    except ValueError as exc:
        raise UnstorableValue(f"Event {event.id!r} cannot be remembered: {exc}") from exc
    return MemoryRecord(
        event_id=event.id,
        author=event.author,
        timestamp=event.timestamp,
        text=text,
        content=content,
    )


def memory_records(session: Session) -> list[MemoryRecord]:
    """The records to remember for the session's events, one per event id, in event order."""
    records: dict[str, MemoryRecord] = {}
    for event in session.events:
        record = memory_record(event)
        if record is not None:
            records.setdefault(record.event_id, record)
    return list(records.values())


def query_words(query: str) -> list[str]:
    """The distinct lower-cased words of `query` that search matches on."""
    words = dict.fromkeys(w for w in _WORD.findall(query.lower()) if len(w) >= MIN_WORD_LENGTH)
    return list(words)[:MAX_QUERY_WORDS]


class BaseMemoryService(ABC):
    """Remembers the text of a user's sessions and recalls it by keyword."""

    @abstractmethod
    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's final text events; events already remembered are skipped."""

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str, limit: int = 20
    ) -> SearchMemoryResponse:
        """Entries of the user's remembered sessions of the app matching `query`, newest first.

        Args:
            app_name: The app whose memories are searched.
            user_id: The user whose memories are searched; other users' are never returned.
            query: Free text; any of its words of two or more characters may match.
            limit: The most entries returned; zero or less returns none.
        """
        words = query_words(query)
        if not words or limit <= 0:
            return SearchMemoryResponse()
        return SearchMemoryResponse(
            memories=await self._search(
                app_name=app_name, user_id=user_id, words=words, limit=limit
            )
        )

    @abstractmethod
    async def _search(
        self, *, app_name: str, user_id: str, words: list[str], limit: int
    ) -> list[MemoryEntry]:
        """Up to `limit` entries matching any of `words` (lower-cased, distinct), newest first."""

    async def close(self) -> None:  # noqa: B027 - optional hook, most services hold nothing
        """Release resources held by the service."""
