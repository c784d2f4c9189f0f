"""Compaction events: which one is the latest, what it covers, and which events a new one covers.

A compaction event (ADK's shape: author "user", `actions.compaction` with the summary and the
covered timestamps) stands, in every later model request, for the events it covers. agentd's
compactions each cover everything before their end (an earlier summary included), so a request
needs only the latest one: its summary, then the events after the covered range. The range is
kept by seq, under `customMetadata[COMPACTION_KEY]`, beside ADK's timestamps (ADK's
`EventCompaction` admits no other field): seqs are exact where timestamps may tie.

The latest compaction is the last compaction event in seq order. Two compactions computed
concurrently (two replicas ending a session's invocations close together) are both
self-contained, so whichever was stored last is a correct one to build from.

This module is pure (events in, decisions out): the engine's contents (`app.agents.contents`)
and the compaction run (`app.invocations.compaction`) share it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.genai import types

from app.sessions.models import Event, EventActions, EventCompaction, new_invocation_id

#: The customMetadata key of a compaction event: {"startSeq": int, "endSeq": int}.
COMPACTION_KEY = "agentdCompaction"


@dataclass(frozen=True)
class Compaction:
    """A stored compaction event's summary and the seq range it covers."""

    event: Event
    start_seq: int
    end_seq: int

    @property
    def summary(self) -> types.Content:
        """The summary content (ADK's `compactedContent`)."""
        assert self.event.actions.compaction is not None
        return self.event.actions.compaction.compacted_content


def as_compaction(event: Event) -> Compaction | None:
    """`event` read as an agentd compaction, or None (not one, or one without a seq range: an
    imported ADK compaction is kept in the history but not built from)."""
    if event.actions.compaction is None or not event.custom_metadata:
        return None
    covered = event.custom_metadata.get(COMPACTION_KEY)
    if not isinstance(covered, dict):
        return None
    start, end = covered.get("startSeq"), covered.get("endSeq")
    if not isinstance(start, int) or not isinstance(end, int) or start > end:
        return None
    return Compaction(event, start, end)


def latest_compaction(events: Sequence[Event]) -> Compaction | None:
    """The last compaction event of `events` (seq order), read from the end."""
    for event in reversed(events):
        if event.actions.compaction is not None:
            found = as_compaction(event)
            if found is not None:
                return found
    return None


def first_after(events: Sequence[Event], seq: int) -> int:
    """The index of the first event of `events` (seq order) whose seq is above `seq`."""
    low, high = 0, len(events)
    while low < high:
        middle = (low + high) // 2
        middle_seq = events[middle].seq
        if middle_seq is not None and middle_seq <= seq:
            low = middle + 1
        else:
            high = middle
    return low


@dataclass(frozen=True)
class Window:
    """What a new compaction summarizes: the latest one (if any) and the raw events after it."""

    previous: Compaction | None
    events: list[Event]

    @property
    def start_seq(self) -> int:
        """The first seq the new compaction covers (the previous one's start, if any)."""
        if self.previous is not None:
            return self.previous.start_seq
        return self.events[0].seq or 1

    @property
    def end_seq(self) -> int:
        """The last seq the new compaction covers."""
        return self.events[-1].seq or 0

    @property
    def start_timestamp(self) -> float:
        """ADK's start of the covered range."""
        if self.previous is not None and self.previous.event.actions.compaction is not None:
            return self.previous.event.actions.compaction.start_timestamp
        return self.events[0].timestamp

    def summarizer_input(self) -> list[Event]:
        """The events a summarizer reads: the previous summary as an event with content (its
        timestamp the start of what it covers), then the raw events."""
        if self.previous is None:
            return list(self.events)
        summary = self.previous.event.model_copy(
            update={"content": self.previous.summary, "timestamp": self.start_timestamp}
        )
        return [summary, *self.events]


def window_to_compact(
    events: Sequence[Event], *, interval: int, overlap: int, up_to_seq: int | None = None
) -> Window | None:
    """The window a compaction is due for, or None.

    Only events up to `up_to_seq` count (the end of the invocation that asks): the session's
    next invocation may be running meanwhile, and its events are not for this compaction.

    Due once `interval + overlap` invocations followed the latest compaction's range: the new
    one then covers all of them but the last `overlap`, which stay raw in the request, so every
    compaction summarizes `interval` new invocations. The window ends early rather than between
    a function call and its response (`_self_contained`). An invocation counts once it has an
    event with content (a state PATCH's `p-` events have none).
    """
    if up_to_seq is not None:
        events = events[: first_after(events, up_to_seq)]
    previous = latest_compaction(events)
    start = first_after(events, previous.end_seq) if previous is not None else 0
    raw = [e for e in events[start:] if e.actions.compaction is None and e.seq is not None]
    first_index: dict[str, int] = {}
    for index, event in enumerate(raw):
        if event.content is not None and event.invocation_id not in first_index:
            first_index[event.invocation_id] = index
    invocations = sorted(first_index.values())
    if len(invocations) < interval + overlap:
        return None
    cut = invocations[len(invocations) - overlap] if overlap else len(raw)
    window = _self_contained(raw[:cut], raw)
    if not window:
        return None
    return Window(previous, window)


def compaction_event(window: Window, summary: Event, *, timestamp: float | None = None) -> Event:
    """The event to store for `window`, from what a summarizer returned (its compaction's
    content and its usage kept; the range, author and invocation id are agentd's)."""
    assert summary.actions.compaction is not None
    content = summary.actions.compaction.compacted_content.model_copy(update={"role": "model"})
    extra: dict[str, Any] = {}
    if timestamp is not None:
        extra["timestamp"] = timestamp
    return Event(
        author="user",
        invocation_id=new_invocation_id(),
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=window.start_timestamp,
                end_timestamp=window.events[-1].timestamp,
                compacted_content=content,
            )
        ),
        usage_metadata=summary.usage_metadata,
        custom_metadata={
            **(summary.custom_metadata or {}),
            COMPACTION_KEY: {"startSeq": window.start_seq, "endSeq": window.end_seq},
        },
        **extra,
    )


def _self_contained(window: list[Event], raw: list[Event]) -> list[Event]:
    """The longest prefix of `window` after which no function call waits for its response.

    A call the rest of the history never answers and that is not the newest invocation's (a
    run that died before answering it: the failure handling answers calls, so this is rare)
    would block every later compaction; it is ignored, as ADK's second pass does. The request
    never shows such a call anyway (`contents._answered_only`).
    """
    answered = {r.id for e in raw for r in e.get_function_responses() if r.id}
    newest = raw[-1].invocation_id if raw else None
    dead = {
        c.id
        for e in window
        if e.invocation_id != newest
        for c in e.get_function_calls()
        if c.id and c.id not in answered
    }
    open_calls: set[str] = set()
    length = 0
    for index, event in enumerate(window):
        open_calls -= {r.id for r in event.get_function_responses() if r.id}
        open_calls |= {c.id for c in event.get_function_calls() if c.id and c.id not in dead}
        if not open_calls:
            length = index + 1
    return window[:length]


__all__ = [
    "COMPACTION_KEY",
    "Compaction",
    "Window",
    "as_compaction",
    "compaction_event",
    "first_after",
    "latest_compaction",
    "window_to_compact",
]
