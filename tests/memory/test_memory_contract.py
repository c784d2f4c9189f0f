"""The MemoryService contract: every implementation (in-memory, SQLite, PostgreSQL) passes it."""

from datetime import datetime
from typing import Any

import pytest
from google.genai import types

from app.memory.base import BaseMemoryService, SearchMemoryResponse
from app.sessions.models import Event, Session

APP = "capital_agent"
T0 = 1_800_000_000.0


def _event(text: str | None, *, author: str = "agent", timestamp: float = T0, **kw: Any) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)]) if text else None
    return Event(author=author, invocation_id="e-1", content=content, timestamp=timestamp, **kw)


def _session(
    *events: Event, session_id: str = "s1", user_id: str = "u1", app_name: str = APP
) -> Session:
    return Session(id=session_id, app_name=app_name, user_id=user_id, events=list(events))


async def _search(
    service: BaseMemoryService, query: str, *, user_id: str = "u1", app_name: str = APP, **kw: Any
) -> SearchMemoryResponse:
    return await service.search_memory(app_name=app_name, user_id=user_id, query=query, **kw)


def _texts(response: SearchMemoryResponse) -> list[str | None]:
    return [m.content.parts[0].text if m.content.parts else None for m in response.memories]


async def test_search_finds_remembered_events_by_keyword_ignoring_case(
    memory_service: BaseMemoryService,
) -> None:
    await memory_service.add_session_to_memory(
        _session(
            _event("What is the capital of France?", author="user"),
            _event("The capital of France is Paris."),
            _event("Nothing to see here."),
        )
    )
    found = await _search(memory_service, "PARIS")
    assert _texts(found) == ["The capital of France is Paris."]
    # Equal timestamps: the later event of the session comes first.
    assert _texts(await _search(memory_service, "france")) == [
        "The capital of France is Paris.",
        "What is the capital of France?",
    ]
    assert (await _search(memory_service, "berlin")).memories == []


async def test_search_matches_any_query_word_of_two_or_more_characters(
    memory_service: BaseMemoryService,
) -> None:
    await memory_service.add_session_to_memory(
        _session(
            _event("I like tea", timestamp=T0 + 1),
            _event("I like coffee", timestamp=T0 + 2),
            _event("a b c", timestamp=T0 + 3),
        )
    )
    assert _texts(await _search(memory_service, "tea or coffee?")) == [
        "I like coffee",
        "I like tea",
    ]
    # One-letter words are ignored, so they match nothing on their own.
    assert (await _search(memory_service, "a b c")).memories == []


async def test_search_treats_like_wildcards_in_the_query_literally(
    memory_service: BaseMemoryService,
) -> None:
    await memory_service.add_session_to_memory(
        _session(_event("progress is 50%"), _event("snake_case names"))
    )
    assert _texts(await _search(memory_service, "%%")) == []
    assert _texts(await _search(memory_service, "snake_case")) == ["snake_case names"]
    assert _texts(await _search(memory_service, "snakeXcase")) == []


async def test_search_returns_only_the_users_own_memories_of_the_app(
    memory_service: BaseMemoryService,
) -> None:
    await memory_service.add_session_to_memory(_session(_event("mine about rome")))
    await memory_service.add_session_to_memory(
        _session(_event("other user about rome"), user_id="u2")
    )
    await memory_service.add_session_to_memory(
        _session(_event("other app about rome"), app_name="other_app")
    )
    assert _texts(await _search(memory_service, "rome")) == ["mine about rome"]
    assert _texts(await _search(memory_service, "rome", user_id="u2")) == ["other user about rome"]
    assert _texts(await _search(memory_service, "rome", app_name="other_app")) == [
        "other app about rome"
    ]
    assert (await _search(memory_service, "rome", user_id="nobody")).memories == []


async def test_adding_the_same_session_twice_does_not_duplicate_entries(
    memory_service: BaseMemoryService,
) -> None:
    first = _event("remember the milk", timestamp=T0)
    await memory_service.add_session_to_memory(_session(first))
    later = _event("remember the eggs", timestamp=T0 + 1)
    await memory_service.add_session_to_memory(_session(first, later))
    await memory_service.add_session_to_memory(_session(first, later))
    assert _texts(await _search(memory_service, "remember")) == [
        "remember the eggs",
        "remember the milk",
    ]


async def test_same_event_id_in_another_session_is_a_separate_memory(
    memory_service: BaseMemoryService,
) -> None:
    event = _event("shared words")
    await memory_service.add_session_to_memory(_session(event, session_id="s1"))
    await memory_service.add_session_to_memory(_session(event, session_id="s2"))
    assert len((await _search(memory_service, "shared")).memories) == 2


async def test_events_without_text_and_partial_events_are_not_remembered(
    memory_service: BaseMemoryService,
) -> None:
    call = types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(name="lookup", args={"q": "oslo"}))],
    )
    thought = types.Content(role="model", parts=[types.Part(text="oslo musing", thought=True)])
    await memory_service.add_session_to_memory(
        _session(
            _event(None),
            Event(author="agent", content=call),
            Event(author="agent", content=thought),
            _event("   "),
            _event("oslo streaming chunk", partial=True),
            _event("oslo is in norway"),
        )
    )
    assert _texts(await _search(memory_service, "oslo lookup musing chunk")) == [
        "oslo is in norway"
    ]


async def test_session_with_nothing_to_remember_is_accepted(
    memory_service: BaseMemoryService,
) -> None:
    await memory_service.add_session_to_memory(_session())
    await memory_service.add_session_to_memory(_session(_event(None)))
    assert (await _search(memory_service, "anything")).memories == []


async def test_results_are_newest_first_and_capped_by_limit(
    memory_service: BaseMemoryService,
) -> None:
    await memory_service.add_session_to_memory(
        _session(*(_event(f"note {i}", timestamp=T0 + i) for i in (3, 1, 4, 0, 2)))
    )
    await memory_service.add_session_to_memory(
        _session(_event("note 5", timestamp=T0 + 5), session_id="s2")
    )
    everything = await _search(memory_service, "note")
    assert _texts(everything) == [f"note {i}" for i in (5, 4, 3, 2, 1, 0)]
    assert _texts(await _search(memory_service, "note", limit=2)) == ["note 5", "note 4"]
    assert (await _search(memory_service, "note", limit=0)).memories == []


async def test_default_limit_is_twenty(memory_service: BaseMemoryService) -> None:
    await memory_service.add_session_to_memory(
        _session(*(_event(f"item {i}", timestamp=T0 + i) for i in range(25)))
    )
    found = await _search(memory_service, "item")
    assert _texts(found) == [f"item {i}" for i in range(24, 4, -1)]


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "?!", "a"])
async def test_blank_query_returns_nothing(memory_service: BaseMemoryService, query: str) -> None:
    await memory_service.add_session_to_memory(_session(_event("a ? ! anything at all")))
    assert (await _search(memory_service, query)).memories == []


async def test_entry_carries_author_content_id_and_iso_timestamp(
    memory_service: BaseMemoryService,
) -> None:
    content = types.Content(
        role="user",
        parts=[
            types.Part(text="Book a table in Lisbon"),
            types.Part(function_call=types.FunctionCall(name="book", args={"city": "Lisbon"})),
        ],
    )
    event = Event(author="user", content=content, timestamp=T0 + 0.25)
    await memory_service.add_session_to_memory(_session(event))
    (entry,) = (await _search(memory_service, "lisbon")).memories
    assert entry.author == "user"
    assert entry.id == event.id
    assert entry.content == content
    assert entry.timestamp is not None
    parsed = datetime.fromisoformat(entry.timestamp)
    assert parsed.utcoffset() is not None
    assert parsed.timestamp() == T0 + 0.25
    assert entry.to_wire()["content"]["parts"][0] == {"text": "Book a table in Lisbon"}


async def test_returned_entries_cannot_change_what_is_remembered(
    memory_service: BaseMemoryService,
) -> None:
    content = types.Content(
        role="model",
        parts=[
            types.Part(text="weather in Kyoto"),
            types.Part(function_call=types.FunctionCall(name="f", args={"nested": {"a": 1}})),
        ],
    )
    await memory_service.add_session_to_memory(_session(Event(author="agent", content=content)))
    (entry,) = (await _search(memory_service, "kyoto")).memories
    assert entry.content.parts is not None
    entry.content.parts[0].text = "changed"
    call = entry.content.parts[1].function_call
    assert call is not None
    assert call.args is not None
    call.args["nested"]["a"] = 2
    (again,) = (await _search(memory_service, "kyoto")).memories
    assert again.content == content
