"""The history cache keeps most sessions as stored JSON bytes and the hottest few parsed
(app.sessions.history_cache), on a real SQLite file."""

import gc
import tracemalloc
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from google.genai import types

from app.db.engine import create_db_engine
from app.db.migrate import upgrade
from app.sessions.database import DatabaseSessionService
from app.sessions.models import Event, EventActions, Session

APP = "app"
#: A session service on the test's database, with the given cache settings.
MakeService = Callable[..., DatabaseSessionService]


@pytest.fixture
async def make_service(tmp_path: Path) -> AsyncIterator[MakeService]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"
    upgrade(url, "head")
    engine = create_db_engine(url, pool_size=1)

    def make(**kwargs: Any) -> DatabaseSessionService:
        return DatabaseSessionService(engine, **kwargs)

    yield make
    await engine.dispose()


def _turn(n: int) -> list[Event]:
    """One turn as the runner stores it: a question, a call, its response, an answer."""
    call_id = f"call-{n}"
    return [
        Event(
            author="user",
            invocation_id=f"e-{n}",
            content=types.Content(role="user", parts=[types.Part(text=f"Question {n}, Zoë?")]),
        ),
        Event(
            author="agent",
            invocation_id=f"e-{n}",
            content=types.Content(
                role="model",
                parts=[
                    types.Part(
                        function_call=types.FunctionCall(
                            id=call_id, name="lookup", args={"n": n, "deep": [{"x": 1.5}]}
                        )
                    )
                ],
            ),
        ),
        Event(
            author="agent",
            invocation_id=f"e-{n}",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=call_id, name="lookup", response={"result": n}
                        )
                    ),
                    types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00")),
                ],
            ),
            actions=EventActions(state_delta={"n": n}, artifact_delta={"notes.txt": n}),
        ),
        Event(
            author="agent",
            invocation_id=f"e-{n}",
            content=types.Content(role="model", parts=[types.Part(text=f"Answer {n}.")]),
        ),
    ]


async def _grow(service: DatabaseSessionService, session_id: str, turns: int) -> Session:
    session = await service.create_session(app_name=APP, user_id="u", session_id=session_id)
    for n in range(turns):
        for event in _turn(n):
            await service.append_event(session, event)
    return session


async def _read(service: DatabaseSessionService, session_id: str) -> Session:
    session = await service.get_session(app_name=APP, user_id="u", session_id=session_id)
    assert session is not None
    return session


def _wire(session: Session) -> list[dict[str, object]]:
    return [
        event.model_dump(mode="json", by_alias=True, exclude_none=True) for event in session.events
    ]


async def test_a_cooled_session_is_parsed_back_from_its_bytes_as_stored(
    make_service: MakeService,
) -> None:
    service = make_service(history_hot_sessions=1)
    await _grow(service, "a", 3)
    await _grow(service, "b", 1)
    first = await _read(service, "a")
    uncached = make_service(history_cache_events=0)
    assert _wire(first) == _wire(await _read(uncached, "a"))
    await _read(service, "b")  # "a" leaves the parsed tier, its bytes stay
    cooled = [e for e in service._history._entries.values() if e.parsed is None]
    assert [len(e.stored) for e in cooled] == [12]
    again = await _read(service, "a")
    assert _wire(again) == _wire(first)
    assert again.events[0] is not first.events[0]  # parsed again, from the cached bytes
    content = again.events[2].content
    assert content is not None
    assert content.parts is not None
    assert content.parts[1].inline_data is not None
    assert content.parts[1].inline_data.data == b"\x89PNG\x00"


async def test_a_hot_session_hands_out_the_same_events_turn_after_turn(
    make_service: MakeService,
) -> None:
    # The contents memo trusts the very same Event objects: a hot session must keep them.
    service = make_service()
    session = await _grow(service, "a", 2)
    before = await _read(service, "a")
    for event in _turn(2):
        await service.append_event(session, event)
    after = await _read(service, "a")
    assert [e.seq for e in after.events] == list(range(1, 13))
    assert all(a is b for a, b in zip(before.events, after.events[:8], strict=True))
    assert after.events is not before.events  # each caller gets its own list


async def test_appends_to_a_cooled_session_are_kept_and_parsed_with_the_rest(
    make_service: MakeService,
) -> None:
    service = make_service(history_hot_sessions=1)
    session = await _grow(service, "a", 1)
    await _read(service, "a")
    await _grow(service, "b", 1)
    await _read(service, "b")
    for event in _turn(1):
        await service.append_event(session, event)
    got = await _read(service, "a")
    assert [e.seq for e in got.events] == list(range(1, 9))
    assert got.events[-1].content is not None
    assert got.events[-1].content.parts[0].text == "Answer 1."  # type: ignore[index]


async def test_the_budget_and_the_session_event_cap_bound_the_cache(
    make_service: MakeService,
) -> None:
    service = make_service(history_cache_events=10, max_session_events=6)
    await _grow(service, "a", 2)
    got = await _read(service, "a")
    assert [e.seq for e in got.events] == [3, 4, 5, 6, 7, 8]
    await _grow(service, "b", 1)
    await _read(service, "b")
    assert service._history._size <= 10
    again = await _read(service, "a")
    assert [e.seq for e in again.events] == [3, 4, 5, 6, 7, 8]


async def test_a_cooled_cached_event_costs_under_a_kilobyte(
    make_service: MakeService,
) -> None:
    # Issue 30's target: parsed, an event held ~5 KB of pydantic objects; cooled, it is held as
    # its stored JSON (~300-500 bytes here).
    service = make_service(history_hot_sessions=1)
    await _grow(service, "long", 500)
    await _grow(service, "other", 1)
    service._history = type(service._history)(100_000, hot_sessions=1)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        await _read(service, "long")
        await _read(service, "other")  # "long" cools: its parsed events are let go
        gc.collect()
        per_event = (tracemalloc.get_traced_memory()[0] - base) / 2000
    finally:
        tracemalloc.stop()
    assert per_event < 1024, per_event
