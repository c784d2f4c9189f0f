"""The InvocationStore contract, run over every database backend (`db_engine`).

Sessions are made by the real DatabaseSessionService on the same engine. Expiry is exercised with
negative lease durations (a lease that has already expired) instead of waiting for time to pass.
"""

import pytest

from app.errors import InvocationNotFound, SessionNotFound
from app.invocations.models import InvocationStatus, SessionRef
from app.invocations.store import InvocationStore
from app.sessions.models import Event
from tests.invocations.store_helpers import (
    APP,
    EXPIRED,
    LONG,
    S1,
    S2,
    Backend,
    create_invocation,
    fence,
)

_create = create_invocation


async def _status(store: InvocationStore, invocation_id: str, ref: SessionRef = S1) -> str:
    return (await store.get(ref, invocation_id)).invocation.status.value


# -- create and the lease -------------------------------------------------------------------


async def test_create_without_acquiring_leaves_the_invocation_queued(backend: Backend) -> None:
    stored = await _create(backend.store, "inv-a")

    assert stored.created
    assert not stored.acquired
    assert stored.invocation.status is InvocationStatus.QUEUED
    assert stored.session_pk == await backend.store.session_pk(S1)
    got = await backend.store.get(S1, "inv-a")
    assert got.invocation == stored.invocation
    assert got.request_hash == "hash-1"
    assert got.invocation.start_time is None


async def test_create_with_acquire_takes_the_lease_and_runs(backend: Backend) -> None:
    stored = await _create(backend.store, "inv-a", acquire=True)

    assert stored.created
    assert stored.acquired
    assert stored.invocation.status is InvocationStatus.RUNNING
    got = (await backend.store.get(S1, "inv-a")).invocation
    assert got.status is InvocationStatus.RUNNING
    assert got.start_time is not None
    assert got.start_time >= got.create_time


async def test_create_in_a_missing_session_is_session_not_found(backend: Backend) -> None:
    with pytest.raises(SessionNotFound):
        await _create(backend.store, "inv-a", ref=SessionRef(APP, "u1", "nope"))

    with pytest.raises(SessionNotFound):
        await backend.store.session_pk(SessionRef(APP, "u1", "nope"))


async def test_second_invocation_cannot_take_a_held_lease(backend: Backend) -> None:
    first = await _create(backend.store, "inv-a", acquire=True)
    second = await _create(backend.store, "inv-b", acquire=True)

    assert first.acquired
    assert not second.acquired
    assert second.invocation.status is InvocationStatus.QUEUED
    assert not await backend.store.try_acquire("inv-b", second.session_pk, "replica-2", LONG)
    assert await _status(backend.store, "inv-b") == "queued"


async def test_leases_are_per_session(backend: Backend) -> None:
    await _create(backend.store, "inv-a", acquire=True)

    other = await _create(backend.store, "inv-b", ref=S2, acquire=True)

    assert other.acquired


async def test_queued_invocations_take_the_lease_first_come_first_served(
    backend: Backend,
) -> None:
    store = backend.store
    running = await _create(store, "inv-a", acquire=True)
    await _create(store, "inv-b")
    await _create(store, "inv-c")
    pk = running.session_pk

    await store.finish(fence("inv-a"), pk, InvocationStatus.COMPLETED)

    assert not await store.try_acquire("inv-c", pk, "replica-1", LONG)
    assert await store.try_acquire("inv-b", pk, "replica-1", LONG)
    assert await _status(store, "inv-b") == "running"
    assert not await store.try_acquire("inv-c", pk, "replica-1", LONG)
    await store.finish(fence("inv-b"), pk, InvocationStatus.COMPLETED)
    assert await store.try_acquire("inv-c", pk, "replica-1", LONG)


async def test_idempotency_key_collision_returns_the_existing_invocation(
    backend: Backend,
) -> None:
    first = await _create(backend.store, "inv-a", idempotency_key="key-1")

    again = await _create(
        backend.store, "inv-b", idempotency_key="key-1", request_hash="hash-2", acquire=True
    )

    assert first.created
    assert not again.created
    assert not again.acquired
    assert again.invocation.id == "inv-a"
    assert again.request_hash == "hash-1"
    assert again.session_pk == first.session_pk
    with pytest.raises(InvocationNotFound):
        await backend.store.get(S1, "inv-b")
    found = await backend.store.find_by_key(S1, "key-1")
    assert found is not None
    assert found.invocation.id == "inv-a"
    assert await backend.store.find_by_key(S2, "key-1") is None


async def test_the_same_idempotency_key_may_be_used_in_another_session(backend: Backend) -> None:
    await _create(backend.store, "inv-a", idempotency_key="key-1")

    other = await _create(backend.store, "inv-b", ref=S2, idempotency_key="key-1")

    assert other.created
    assert other.invocation.id == "inv-b"


async def test_delete_forgets_the_invocation(backend: Backend) -> None:
    await _create(backend.store, "inv-a")

    await backend.store.delete("inv-a")

    with pytest.raises(InvocationNotFound):
        await backend.store.get(S1, "inv-a")


# -- finish, heartbeat, cancel, reap ----------------------------------------------------------


async def test_finish_releases_the_lease_and_returns_the_final_invocation(
    backend: Backend,
) -> None:
    running = await _create(backend.store, "inv-a", acquire=True)
    problem = {"type": "invocation-failed", "title": "Invocation failed.", "status": 500}

    final = await backend.store.finish(
        fence("inv-a"), running.session_pk, InvocationStatus.FAILED, problem
    )

    assert final is not None
    assert final.status is InvocationStatus.FAILED
    assert final.error == problem
    assert final.end_time is not None
    assert final.start_time is not None
    assert final.end_time >= final.start_time
    assert final == (await backend.store.get(S1, "inv-a")).invocation
    assert (await _create(backend.store, "inv-b", acquire=True)).acquired


async def test_finish_of_an_unknown_invocation_returns_none(backend: Backend) -> None:
    pk = await backend.store.session_pk(S1)

    assert await backend.store.finish(fence("inv-x"), pk, InvocationStatus.COMPLETED) is None


async def test_heartbeat_extends_the_lease(backend: Backend) -> None:
    running = await _create(backend.store, "inv-a", acquire=True, ttl=EXPIRED)

    await backend.store.heartbeat(fence("inv-a"), running.session_pk, LONG)

    claimed, _ = await backend.store.claim(owner="replica-2", ttl=LONG, max_attempts=3, limit=9)
    assert claimed == []  # its lease is live again: nobody takes it over
    assert await _status(backend.store, "inv-a") == "running"
    assert not (await _create(backend.store, "inv-b", acquire=True)).acquired


async def test_heartbeat_reports_a_cancel_request(backend: Backend) -> None:
    running = await _create(backend.store, "inv-a", acquire=True)
    assert await backend.store.heartbeat(fence("inv-a"), running.session_pk, LONG) == (
        False,
        True,
    )

    await backend.store.request_cancel(S1, "inv-a")

    assert await backend.store.heartbeat(fence("inv-a"), running.session_pk, LONG) == (
        True,
        True,
    )


async def test_request_cancel_flags_only_live_invocations(backend: Backend) -> None:
    running = await _create(backend.store, "inv-a", acquire=True)
    await _create(backend.store, "inv-b")
    await _create(backend.store, "inv-c")
    await backend.store.finish(fence("inv-c", 0), running.session_pk, InvocationStatus.COMPLETED)

    flagged_running = await backend.store.request_cancel(S1, "inv-a")
    flagged_queued = await backend.store.request_cancel(S1, "inv-b")
    finished = await backend.store.request_cancel(S1, "inv-c")

    assert flagged_running.cancel_requested
    assert flagged_running.status is InvocationStatus.RUNNING
    assert flagged_queued.cancel_requested
    assert not finished.cancel_requested
    assert finished.status is InvocationStatus.COMPLETED


async def test_request_cancel_of_another_sessions_invocation_is_not_found(
    backend: Backend,
) -> None:
    await _create(backend.store, "inv-a", acquire=True)

    with pytest.raises(InvocationNotFound):
        await backend.store.request_cancel(S2, "inv-a")

    assert not (await backend.store.get(S1, "inv-a")).invocation.cancel_requested


async def test_a_queued_invocation_whose_owner_stopped_does_not_hold_the_queue(
    backend: Backend,
) -> None:
    await _create(backend.store, "inv-a", ttl=EXPIRED)

    assert (await _create(backend.store, "inv-b", acquire=True)).acquired


# -- reads ------------------------------------------------------------------------------------


async def test_list_page_is_newest_first_with_a_working_cursor(backend: Backend) -> None:
    ids = [f"inv-{n}" for n in range(5)]
    for invocation_id in ids:
        await _create(backend.store, invocation_id)
    await _create(backend.store, "inv-other", ref=S2)

    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page, token = await backend.store.list_page(S1, page_size=2, page_token=token)
        pages += 1
        seen += [invocation.id for invocation in page]
        if token is None:
            break

    assert seen == list(reversed(ids))
    assert pages == 3


async def test_list_page_of_a_missing_session_is_session_not_found(backend: Backend) -> None:
    with pytest.raises(SessionNotFound):
        await backend.store.list_page(SessionRef(APP, "u1", "nope"), page_size=10, page_token=None)


async def test_get_of_another_sessions_invocation_is_not_found(backend: Backend) -> None:
    await _create(backend.store, "inv-a")

    with pytest.raises(InvocationNotFound):
        await backend.store.get(S2, "inv-a")
    with pytest.raises(InvocationNotFound):
        await backend.store.get(SessionRef(APP, "u2", "s1"), "inv-a")


async def test_events_returns_only_that_invocations_events_after_a_seq(backend: Backend) -> None:
    sessions = backend.sessions
    for ref in (S1, S2):
        session = await sessions.get_session(
            app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id
        )
        assert session is not None
        for author, invocation_id in [("user", "inv-a"), ("user", "inv-b"), ("agent", "inv-a")]:
            await sessions.append_event(session, Event(author=author, invocation_id=invocation_id))
    pk = await backend.store.session_pk(S1)

    all_of_a = await backend.store.events(pk, "inv-a", 0)
    after_first = await backend.store.events(pk, "inv-a", 1)
    of_b = await backend.store.events(pk, "inv-b", 0)

    assert [(e.seq, e.author, e.invocation_id) for e in all_of_a] == [
        (1, "user", "inv-a"),
        (3, "agent", "inv-a"),
    ]
    assert [e.seq for e in after_first] == [3]
    assert [e.seq for e in of_b] == [2]
