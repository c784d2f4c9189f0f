"""The SessionService contract: every implementation (in-memory, SQLite, PostgreSQL) passes it."""

import base64
import json
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from google.genai import types

from app.errors import (
    AgentdError,
    ArtifactVersionConflict,
    EventTooLarge,
    InvalidIdentifier,
    InvalidPageToken,
    InvalidRequest,
    SessionAlreadyExists,
    SessionConflict,
    SessionNotFound,
    StateTooLarge,
    UnstorableValue,
)
from app.sessions import database as database_sessions
from app.sessions import in_memory as in_memory_sessions
from app.sessions.base import BaseSessionService, GetSessionConfig, NewArtifactVersion
from app.sessions.models import Event, EventActions, Session

APP = "capital_agent"


def _event(delta: dict[str, Any] | None = None, text: str | None = None, **kw: Any) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)]) if text else None
    return Event(
        author="agent",
        invocation_id="e-1",
        content=content,
        actions=EventActions(state_delta=delta or {}, **kw),
    )


def _artifact(name: str, version: int) -> NewArtifactVersion:
    return NewArtifactVersion(
        name=name,
        version=version,
        mime_type="text/plain",
        size=3,
        sha256="0" * 64,
        blob_key="sha256/00/00/" + "0" * 64,
    )


async def _reload(service: BaseSessionService, session: Session) -> Session:
    fresh = await service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.id
    )
    assert fresh is not None
    return fresh


async def test_create_session_generates_a_uuid4_id_with_dashes_when_none_is_given(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    assert session.id == str(uuid.UUID(session.id, version=4))  # as ADK writes it
    assert session.events == []
    assert session.last_seq == 0
    assert (await _reload(session_service, session)).id == session.id


async def test_create_session_with_taken_id_raises_already_exists(
    session_service: BaseSessionService,
) -> None:
    await session_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    with pytest.raises(SessionAlreadyExists):
        await session_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    # The same id for another user or app is a different session.
    await session_service.create_session(app_name=APP, user_id="u2", session_id="s1")
    await session_service.create_session(app_name="other", user_id="u1", session_id="s1")


@pytest.mark.parametrize("bad_id", ["../etc", "a/b", "a\x00b", "a\nb", "", ".", "x" * 129])
async def test_create_session_rejects_unsafe_ids(
    session_service: BaseSessionService, bad_id: str
) -> None:
    with pytest.raises(InvalidIdentifier):
        await session_service.create_session(app_name=APP, user_id="u1", session_id=bad_id)


async def test_get_missing_session_returns_none(session_service: BaseSessionService) -> None:
    assert await session_service.get_session(app_name=APP, user_id="u1", session_id="nope") is None


async def test_append_event_assigns_gap_free_seq_and_preserves_the_event(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    call = types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(id="c1", name="f", args={"x": 1}))],
    )
    first = Event(author="agent", invocation_id="e-1", content=call, long_running_tool_ids=[])
    await session_service.append_event(session, first)
    for i in range(4):
        await session_service.append_event(session, _event(text=f"t{i}"))
    assert session.last_seq == 5
    fresh = await _reload(session_service, session)
    assert [e.seq for e in fresh.events] == [1, 2, 3, 4, 5]
    assert fresh.last_seq == 5
    assert fresh.events[0].to_wire() == first.to_wire()
    assert fresh.events[0].content == call


async def test_get_session_limits_events_to_recent_and_after_seq(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    for i in range(10):
        await session_service.append_event(session, _event(text=str(i)))
    recent = await session_service.get_session(
        app_name=APP,
        user_id="u1",
        session_id=session.id,
        config=GetSessionConfig(num_recent_events=3),
    )
    assert recent is not None
    assert [e.seq for e in recent.events] == [8, 9, 10]
    after = await session_service.get_session(
        app_name=APP, user_id="u1", session_id=session.id, config=GetSessionConfig(after_seq=7)
    )
    assert after is not None
    assert [e.seq for e in after.events] == [8, 9, 10]
    none = await session_service.get_session(
        app_name=APP,
        user_id="u1",
        session_id=session.id,
        config=GetSessionConfig(num_recent_events=0),
    )
    assert none is not None
    assert none.events == []
    assert none.last_seq == 10


async def test_session_json_is_the_sessions_wire_form_event_for_event(
    session_service: BaseSessionService,
) -> None:
    # The database service splices each event's stored JSON text into the answer unparsed;
    # what a client reads must still be exactly the session's wire form.
    session = await session_service.create_session(
        app_name=APP, user_id="u1", state={"k": "v", "user:name": "Zoë"}
    )
    empty = await session_service.get_session_json(
        app_name=APP, user_id="u1", session_id=session.id
    )
    assert empty is not None
    assert json.loads(empty[0])["events"] == []
    await session_service.append_event(session, _event({"emoji": "\U0001f600 \u2028"}, 'a\n"b"'))
    await session_service.append_event(session, Event(author="user", invocation_id="e-2"))
    await session_service.append_event(
        session, _event(text="nested", custom_metadata={"deep": [{"x": [1, 2.5, None]}]})
    )
    for config in (None, GetSessionConfig(num_recent_events=2), GetSessionConfig(after_seq=2)):
        found = await session_service.get_session_json(
            app_name=APP, user_id="u1", session_id=session.id, config=config
        )
        model = await session_service.get_session(
            app_name=APP, user_id="u1", session_id=session.id, config=config
        )
        assert found is not None
        assert model is not None
        body, last_seq = found
        assert json.loads(body) == json.loads(json.dumps(model.to_wire()))
        assert last_seq == 3
        assert [event["seq"] for event in json.loads(body)["events"]] == [
            event.seq for event in model.events
        ]


def test_a_stored_events_text_gets_its_seq_as_the_last_key() -> None:
    with_seq = database_sessions._with_seq
    assert json.loads(with_seq('{"id": "a", "author": "user"}  ', 7)) == {
        "id": "a",
        "author": "user",
        "seq": 7,
    }
    assert with_seq("{}", 1) == '{"seq":1}'
    assert with_seq("{ }", 2) == '{"seq":2}'
    with pytest.raises(ValueError, match="not a JSON object"):
        with_seq("[1]", 3)


async def test_state_scopes_are_shared_exactly_as_their_prefix_says(
    session_service: BaseSessionService,
) -> None:
    s1 = await session_service.create_session(app_name=APP, user_id="u1")
    s1b = await session_service.create_session(app_name=APP, user_id="u1")
    s2 = await session_service.create_session(app_name=APP, user_id="u2")
    other_app = await session_service.create_session(app_name="other", user_id="u1")
    delta = {"app:motd": "hi", "user:lang": "fr", "temp:scratch": 42, "topic": "capitals"}
    event = await session_service.append_event(s1, _event(delta))

    # temp: is visible to the writer for the rest of the invocation, never stored or returned.
    assert s1.state["temp:scratch"] == 42
    assert "temp:scratch" not in event.actions.state_delta
    s1_fresh = await _reload(session_service, s1)
    assert s1_fresh.state == {"app:motd": "hi", "user:lang": "fr", "topic": "capitals"}
    assert "temp:scratch" not in s1_fresh.events[0].actions.state_delta

    # user: reaches the user's other sessions; app: reaches other users; plain keys stay put.
    assert (await _reload(session_service, s1b)).state == {"app:motd": "hi", "user:lang": "fr"}
    assert (await _reload(session_service, s2)).state == {"app:motd": "hi"}
    assert (await _reload(session_service, other_app)).state == {}

    # Later writes from another session update the shared value everyone sees.
    await session_service.append_event(s2, _event({"app:motd": "bye"}))
    assert (await _reload(session_service, s1)).state["app:motd"] == "bye"


async def test_create_session_state_is_split_by_scope(
    session_service: BaseSessionService,
) -> None:
    state = {"k": 1, "user:v": 2, "app:a": 3, "temp:t": 4}
    created = await session_service.create_session(app_name=APP, user_id="u1", state=state)
    assert created.state == {"k": 1, "user:v": 2, "app:a": 3}
    sibling = await session_service.create_session(app_name=APP, user_id="u1")
    assert sibling.state == {"user:v": 2, "app:a": 3}


async def test_stale_writer_gets_conflict_and_nothing_is_written(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    stale = await _reload(session_service, session)
    await session_service.append_event(session, _event({"n": 1}))
    with pytest.raises(SessionConflict):
        await session_service.append_event(stale, _event({"n": 99, "user:u": 99}))
    fresh = await _reload(session_service, session)
    assert fresh.state == {"n": 1}
    assert [e.seq for e in fresh.events] == [1]


async def test_partial_events_are_never_persisted(session_service: BaseSessionService) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    partial = _event({"x": 1}, text="chunk")
    partial.partial = True
    returned = await session_service.append_event(session, partial)
    assert returned.seq is None
    fresh = await _reload(session_service, session)
    assert fresh.events == []
    assert fresh.state == {}


async def test_failed_append_leaves_session_state_and_events_as_before(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1", state={"k": 0})
    await session_service.append_event(
        session,
        _event({"k": 1}, artifact_delta={"a.txt": 0}),
        artifact_versions=[_artifact("a.txt", 0)],
    )
    before = await _reload(session_service, session)
    # The event row goes in first; the duplicate artifact version row then fails the commit.
    doomed = _event({"k": 2, "user:u": 2, "app:a": 2}, artifact_delta={"a.txt": 0})
    with pytest.raises(ArtifactVersionConflict):
        await session_service.append_event(
            session, doomed, artifact_versions=[_artifact("a.txt", 0)]
        )
    after = await _reload(session_service, session)
    assert after.state == before.state == {"k": 1}
    assert [e.to_wire() for e in after.events] == [e.to_wire() for e in before.events]
    assert session.last_seq == 1
    # The session is still usable by the same writer.
    await session_service.append_event(session, _event({"k": 3}))
    assert (await _reload(session_service, session)).state == {"k": 3}


async def test_non_json_state_value_is_rejected_before_anything_is_written(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    with pytest.raises(UnstorableValue):
        await session_service.append_event(session, _event({"bad": object()}))
    fresh = await _reload(session_service, session)
    assert fresh.events == []
    assert fresh.last_seq == 0


async def test_user_scoped_artifact_versions_collide_across_sessions(
    session_service: BaseSessionService,
) -> None:
    s1 = await session_service.create_session(app_name=APP, user_id="u1")
    s2 = await session_service.create_session(app_name=APP, user_id="u1")
    await session_service.append_event(
        s1,
        _event(artifact_delta={"user:cv.pdf": 0}),
        artifact_versions=[_artifact("user:cv.pdf", 0)],
    )
    # Session-scoped names are per session ...
    await session_service.append_event(s1, _event(), artifact_versions=[_artifact("a.txt", 0)])
    await session_service.append_event(s2, _event(), artifact_versions=[_artifact("a.txt", 0)])
    # ... user-scoped names are shared by the user's sessions.
    with pytest.raises(ArtifactVersionConflict):
        await session_service.append_event(
            s2, _event(), artifact_versions=[_artifact("user:cv.pdf", 0)]
        )


async def test_delete_session_cascades_and_missing_delete_raises(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await session_service.append_event(session, _event(), artifact_versions=[_artifact("a.txt", 0)])
    await session_service.delete_session(app_name=APP, user_id="u1", session_id="s1")
    assert await session_service.get_session(app_name=APP, user_id="u1", session_id="s1") is None
    with pytest.raises(SessionNotFound):
        await session_service.list_events(app_name=APP, user_id="u1", session_id="s1")
    with pytest.raises(SessionNotFound):
        await session_service.delete_session(app_name=APP, user_id="u1", session_id="s1")
    with pytest.raises(SessionNotFound):
        await session_service.append_event(session, _event())
    # A new session with the same id starts empty; its artifact names are free again.
    again = await session_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await session_service.append_event(again, _event(), artifact_versions=[_artifact("a.txt", 0)])
    assert (await _reload(session_service, again)).last_seq == 1


async def _walk_sessions(
    service: BaseSessionService, *, page_size: int, user_id: str = "u1"
) -> list[str]:
    seen: list[str] = []
    token: str | None = None
    while True:
        page = await service.list_sessions(
            app_name=APP, user_id=user_id, page_size=page_size, page_token=token
        )
        assert len(page.sessions) <= page_size
        assert all(s.events == [] for s in page.sessions)
        seen += [s.id for s in page.sessions]
        token = page.next_page_token
        if token is None:
            return seen


async def test_list_sessions_is_newest_update_first_and_pages_are_complete(
    session_service: BaseSessionService,
) -> None:
    ids = [f"s{i:02d}" for i in range(25)]
    for sid in ids:
        await session_service.create_session(app_name=APP, user_id="u1", session_id=sid)
    await session_service.create_session(app_name=APP, user_id="u2", session_id="foreign")
    # An append updates a session: it moves to the front.
    s03 = await session_service.get_session(app_name=APP, user_id="u1", session_id="s03")
    assert s03 is not None
    await session_service.append_event(s03, _event({"n": 1}))
    expected = ["s03", *(sid for sid in reversed(ids) if sid != "s03")]
    assert await _walk_sessions(session_service, page_size=10) == expected
    assert await _walk_sessions(session_service, page_size=100) == expected
    listed = await session_service.list_sessions(app_name=APP, user_id="u1", page_size=3)
    times = [s.last_update_time for s in listed.sessions]
    assert times == sorted(times, reverse=True)
    assert listed.sessions[0].state == {"n": 1}


async def test_list_sessions_pages_never_repeat_a_session_updated_during_the_walk(
    session_service: BaseSessionService,
) -> None:
    ids = [f"s{i:02d}" for i in range(12)]
    for sid in ids:
        await session_service.create_session(app_name=APP, user_id="u1", session_id=sid)
    first = await session_service.list_sessions(app_name=APP, user_id="u1", page_size=5)
    assert [s.id for s in first.sessions] == ["s11", "s10", "s09", "s08", "s07"]
    # Behind the cursor now: a new session, and updates of one seen and one unseen session.
    await session_service.create_session(app_name=APP, user_id="u1", session_id="new")
    for sid in ("s10", "s02"):
        await session_service.update_state(
            app_name=APP, user_id="u1", session_id=sid, state_delta={"touched": True}
        )
    rest: list[str] = []
    token = first.next_page_token
    while token is not None:
        page = await session_service.list_sessions(
            app_name=APP, user_id="u1", page_size=5, page_token=token
        )
        rest += [s.id for s in page.sessions]
        token = page.next_page_token
    assert rest == ["s06", "s05", "s04", "s03", "s01", "s00"]
    assert await _walk_sessions(session_service, page_size=5) == [
        "s02",
        "s10",
        "new",
        "s11",
        *(f"s{i:02d}" for i in (9, 8, 7, 6, 5, 4, 3, 1, 0)),
    ]


async def test_list_sessions_orders_sessions_updated_at_the_same_time_by_id(
    session_service: BaseSessionService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One clock reading for every write: the cursor's id breaks the tie, so pages still never
    # repeat or skip.
    frozen = SimpleNamespace(time=lambda: 1_800_000_000.25)
    monkeypatch.setattr(database_sessions, "time", frozen)
    monkeypatch.setattr(in_memory_sessions, "time", frozen)
    for sid in ("b", "d", "a", "e", "c"):
        await session_service.create_session(app_name=APP, user_id="u1", session_id=sid)
    assert await _walk_sessions(session_service, page_size=2) == ["e", "d", "c", "b", "a"]


async def test_list_events_pages_by_seq_in_both_orders(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    for i in range(7):
        await session_service.append_event(session, _event(text=str(i)))

    async def collect(descending: bool, after_seq: int | None = None) -> list[int]:
        seqs: list[int] = []
        token: str | None = None
        while True:
            page = await session_service.list_events(
                app_name=APP,
                user_id="u1",
                session_id=session.id,
                page_size=3,
                page_token=token,
                descending=descending,
                after_seq=after_seq,
            )
            seqs += [e.seq or 0 for e in page.events]
            token = page.next_page_token
            if token is None:
                return seqs

    assert await collect(False) == [1, 2, 3, 4, 5, 6, 7]
    assert await collect(True) == [7, 6, 5, 4, 3, 2, 1]
    assert await collect(False, after_seq=4) == [5, 6, 7]


async def test_update_state_records_a_user_event_and_honours_expected_seq(
    session_service: BaseSessionService,
) -> None:
    session = await session_service.create_session(app_name=APP, user_id="u1")
    event = await session_service.update_state(
        app_name=APP, user_id="u1", session_id=session.id, state_delta={"x": 2}
    )
    assert event.author == "user"
    assert event.invocation_id.startswith("p-")
    assert event.seq == 1
    with pytest.raises(SessionConflict):
        await session_service.update_state(
            app_name=APP, user_id="u1", session_id=session.id, state_delta={"x": 3}, expected_seq=0
        )
    await session_service.update_state(
        app_name=APP, user_id="u1", session_id=session.id, state_delta={"x": 4}, expected_seq=1
    )
    assert (await _reload(session_service, session)).state == {"x": 4}
    with pytest.raises(SessionNotFound):
        await session_service.update_state(
            app_name=APP, user_id="u1", session_id="missing", state_delta={"x": 1}
        )


@pytest.mark.parametrize(
    "payload",
    [
        {"k": "events-asc", "seq": "1; drop table"},
        {"k": "events-asc", "seq": 2**70},
        {"k": "events-asc", "seq": True},
        {"k": "events-desc", "seq": 1},
        {"k": "sessions", "after": "s1"},
        {"k": "sessions", "t": "1", "id": "s1"},
        {"k": "sessions", "t": True, "id": "s1"},
        {"k": "sessions", "t": 10**400, "id": "s1"},
        {"k": "sessions", "t": float("inf"), "id": "s1"},
        {"k": "sessions", "t": 1.5, "id": 5},
        {"k": "sessions", "t": 1.5, "id": "../etc"},
        {"seq": 1},
        [1, 2],
    ],
)
async def test_forged_page_tokens_are_rejected(
    session_service: BaseSessionService, payload: object
) -> None:
    await session_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    token = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
    with pytest.raises(InvalidPageToken):
        await session_service.list_events(
            app_name=APP, user_id="u1", session_id="s1", page_token=token
        )
    if isinstance(payload, dict) and payload.get("k") == "sessions":
        with pytest.raises(InvalidPageToken):
            await session_service.list_sessions(app_name=APP, user_id="u1", page_token=token)


def _history() -> list[Event]:
    """A session's history as a GET exports it: two runs, state in every scope, an artifact."""
    call = types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(id="c1", name="f", args={"x": 1}))],
    )
    answer = types.Content(
        role="user",
        parts=[types.Part(function_response=types.FunctionResponse(id="c1", name="f"))],
    )
    user = types.Content(role="user", parts=[types.Part(text="hi")])
    return [
        Event(id="ev-1", invocation_id="e-1", author="user", content=user, timestamp=100.0),
        Event(
            id="ev-2",
            invocation_id="e-1",
            author="agent",
            content=call,
            long_running_tool_ids=[],
            timestamp=101.0,
            seq=7,  # an exported seq: the import assigns its own
        ),
        Event(
            id="ev-3",
            invocation_id="e-1",
            author="agent",
            content=answer,
            actions=EventActions(
                state_delta={"topic": "a", "user:visits": 1, "app:motd": "hi", "temp:t": 1},
                artifact_delta={"notes.txt": 0},
            ),
            timestamp=102.0,
        ),
        Event(
            id="ev-4",
            invocation_id="p-2",
            author="user",
            actions=EventActions(state_delta={"topic": "b", "user:visits": 2}),
            timestamp=103.0,
        ),
        Event(
            id="ev-5",
            invocation_id="e-3",
            author="agent",
            content=types.Content(role="model", parts=[types.Part(text="bye")]),
            actions=EventActions(artifact_delta={"notes.txt": 1}),
            timestamp=104.0,
        ),
    ]


async def test_import_session_stores_events_in_order_and_applies_their_state_deltas(
    session_service: BaseSessionService,
) -> None:
    history = _history()
    sent = [e.model_copy(deep=True) for e in history]
    imported = await session_service.import_session(
        app_name=APP,
        user_id="u1",
        session_id="copy",
        state={"k": 1, "topic": "initial", "user:tier": "gold", "temp:x": 1},
        events=sent,
    )
    expected_state = {
        "k": 1,
        "topic": "b",
        "user:tier": "gold",
        "user:visits": 2,
        "app:motd": "hi",
    }
    assert imported.state == expected_state
    assert imported.last_seq == 5
    assert [e.seq for e in imported.events] == [1, 2, 3, 4, 5]

    fresh = await _reload(session_service, imported)
    assert fresh.state == expected_state
    assert fresh.last_seq == 5
    assert [e.seq for e in fresh.events] == [1, 2, 3, 4, 5]
    assert [e.id for e in fresh.events] == ["ev-1", "ev-2", "ev-3", "ev-4", "ev-5"]
    assert [e.invocation_id for e in fresh.events] == ["e-1", "e-1", "e-1", "p-2", "e-3"]
    assert [e.timestamp for e in fresh.events] == [100.0, 101.0, 102.0, 103.0, 104.0]
    # Everything but seq is stored as sent; temp: keys are stripped, as on append.
    for stored, original in zip(fresh.events, history, strict=True):
        want = original.to_wire()
        want.pop("seq", None)
        want["actions"]["stateDelta"].pop("temp:t", None)
        got = stored.to_wire()
        assert got.pop("seq") == stored.seq
        assert got == want
    assert [e.actions.artifact_delta for e in fresh.events][2:] == [
        {"notes.txt": 0},
        {},
        {"notes.txt": 1},
    ]
    # The shared scopes reach the user's and the app's other sessions.
    sibling = await session_service.create_session(app_name=APP, user_id="u1")
    assert sibling.state == {"user:tier": "gold", "user:visits": 2, "app:motd": "hi"}
    stranger = await session_service.create_session(app_name=APP, user_id="u2")
    assert stranger.state == {"app:motd": "hi"}
    # The session goes on from seq 5, conditionally as any other.
    await session_service.append_event(fresh, _event({"topic": "c"}))
    assert (await _reload(session_service, fresh)).last_seq == 6
    with pytest.raises(SessionConflict):
        await session_service.append_event(imported, _event({"topic": "d"}))


async def test_import_session_records_artifact_deltas_without_creating_versions(
    session_service: BaseSessionService,
) -> None:
    imported = await session_service.import_session(
        app_name=APP,
        user_id="u1",
        events=[_event(artifact_delta={"a.txt": 0, "user:cv.pdf": 0})],
    )
    fresh = await _reload(session_service, imported)
    assert fresh.events[0].actions.artifact_delta == {"a.txt": 0, "user:cv.pdf": 0}
    # No version row came with the import: those versions are still free to be written.
    await session_service.append_event(
        fresh,
        _event(artifact_delta={"a.txt": 0, "user:cv.pdf": 0}),
        artifact_versions=[_artifact("a.txt", 0), _artifact("user:cv.pdf", 0)],
    )


def _partial() -> Event:
    event = _event(text="chunk")
    event.partial = True
    return event


@pytest.mark.parametrize(
    ("events", "error", "loc"),
    [
        pytest.param(
            lambda: [_event(), _event(), _event(), _partial()],
            InvalidRequest,
            ["body", "events", 3, "partial"],
            id="partial",
        ),
        pytest.param(
            lambda: [_event(), Event(id="dup", author="a"), Event(id="dup", author="a")],
            InvalidRequest,
            ["body", "events", 2, "id"],
            id="repeated-id",
        ),
        pytest.param(
            lambda: [_event(), Event(id="", author="a")],
            InvalidRequest,
            ["body", "events", 1, "id"],
            id="empty-id",
        ),
        pytest.param(
            lambda: [_event(), Event(id="x" * 129, author="a")],
            InvalidRequest,
            ["body", "events", 1, "id"],
            id="long-id",
        ),
        pytest.param(
            lambda: [_event(), _event({"bad": float("nan")})],
            UnstorableValue,
            ["body", "events", 1, "actions", "stateDelta", "bad"],
            id="unstorable-delta",
        ),
        pytest.param(
            # Found only when the event is encoded, which does not tell where.
            lambda: [_event(), _event({"bad": object()})],
            UnstorableValue,
            ["body", "events", 1],
            id="non-json-delta",
        ),
        pytest.param(
            lambda: [_event(), _event(), _event(text="x" * (2 * 1024 * 1024 + 1))],
            EventTooLarge,
            ["body", "events", 2],
            id="event-too-large",
        ),
        pytest.param(
            # The state the import leaves is too large; the event that took it over is named.
            lambda: [_event({"a": 1}), _event({"big": "x" * (1024 * 1024)}), _event({"b": 2})],
            StateTooLarge,
            ["body", "events", 1, "actions", "stateDelta"],
            id="state-too-large",
        ),
    ],
)
async def test_import_session_with_an_invalid_event_names_it_and_stores_nothing(
    session_service: BaseSessionService,
    events: Callable[[], list[Event]],
    error: type[AgentdError],
    loc: list[str | int],
) -> None:
    batch = events()
    # Shared state in the events before the bad one: none of it may be written either.
    batch[0].actions.state_delta.update({"user:u": 1, "app:a": 1})
    with pytest.raises(error) as raised:
        await session_service.import_session(
            app_name=APP,
            user_id="u1",
            session_id="doomed",
            state={"user:v": 1},
            events=batch,
            loc=("body",),
        )
    assert [e["loc"] for e in raised.value.extras["errors"]] == [loc]
    assert raised.value.detail is not None
    assert raised.value.detail.startswith(".".join(map(str, loc)))
    missing = await session_service.get_session(app_name=APP, user_id="u1", session_id="doomed")
    assert missing is None
    other = await session_service.create_session(app_name=APP, user_id="u1", session_id="doomed")
    assert other.state == {}


async def test_import_session_with_a_taken_id_raises_already_exists_and_writes_nothing(
    session_service: BaseSessionService,
) -> None:
    await session_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    with pytest.raises(SessionAlreadyExists):
        await session_service.import_session(
            app_name=APP,
            user_id="u1",
            session_id="s1",
            state={"user:v": 1},
            events=[_event({"k": 1, "app:a": 1})],
        )
    kept = await _reload(session_service, Session(id="s1", app_name=APP, user_id="u1"))
    assert kept.events == []
    assert kept.state == {}
    with pytest.raises(InvalidIdentifier):
        await session_service.import_session(
            app_name=APP, user_id="u1", session_id="../x", events=[_event()]
        )
