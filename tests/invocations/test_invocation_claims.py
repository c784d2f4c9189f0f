"""Issue 19: the queue in the invocations table, over every database backend (`db_engine`).

`claim` takes over invocations whose owner stopped renewing them (attempt + 1, one winner) or
that were queued for any worker, in each session's order, and fails those whose attempts are
used up; `heartbeat` tells a stalled owner it lost its invocation; `hand_back` makes a run
claimable at once. Expiry is exercised with already-expired leases, not by waiting.
"""

import asyncio

import pytest
from google.genai import types

from app.errors import InvocationNotFound, LeaseLost, SessionBusy
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


async def _claim(store: InvocationStore, owner: str = "replica-2", **kwargs: int) -> list[str]:
    claimed, _ = await store.claim(
        owner=owner,
        ttl=LONG,
        max_attempts=kwargs.get("max_attempts", 3),
        limit=kwargs.get("limit", 10),
    )
    return [c.stored.invocation.id for c in claimed]


async def _call_a_tool(backend: Backend, *, fenced: bool = False) -> None:
    """inv-a's model calls `slow` (call-1) in session s1 (with inv-a's attempt 1 fence)."""
    session = await backend.sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    call = types.FunctionCall(id="call-1", name="slow", args={})
    event = Event(
        author="agent",
        invocation_id="inv-a",
        content=types.Content(role="model", parts=[types.Part(function_call=call)]),
    )
    if fenced:
        await backend.sessions.append_event(session, event, blind=True, fence=fence("inv-a"))
    else:
        await backend.sessions.append_event(session, event)


async def test_an_expired_run_is_taken_over_once_with_its_attempt_counted(
    backend: Backend,
) -> None:
    store = backend.store
    await _create(store, "inv-a", acquire=True, ttl=EXPIRED)
    await _create(store, "inv-live", ref=S2, acquire=True)

    claimed, waiting = await store.claim(owner="replica-2", ttl=LONG, max_attempts=3, limit=10)

    assert [c.stored.invocation.id for c in claimed] == ["inv-a"]
    assert waiting == 0
    (item,) = claimed
    assert item.started
    assert item.stored.acquired  # it holds the session's lease: it runs at once
    assert item.request["newMessage"]["parts"][0]["text"] == "inv-a"
    got = (await store.get(S1, "inv-a")).invocation
    assert (got.status, got.attempt, got.owner) == (InvocationStatus.RUNNING, 2, "replica-2")
    assert got.heartbeat_time is not None
    assert await _claim(store, "replica-3") == []  # taken: nobody else gets it
    # The stalled first owner learns it lost the invocation; the new one keeps it.
    assert await store.heartbeat(fence("inv-a"), item.stored.session_pk, LONG) == (
        False,
        False,
    )
    assert await store.heartbeat(fence("inv-a", 2, "replica-2"), item.stored.session_pk, LONG) == (
        False,
        True,
    )


async def test_used_up_attempts_fail_the_run_and_answer_its_open_calls(backend: Backend) -> None:
    store = backend.store
    running = await _create(store, "inv-a", acquire=True, ttl=EXPIRED)
    await _call_a_tool(backend)

    assert await _claim(store, max_attempts=1) == []

    failed = (await store.get(S1, "inv-a")).invocation
    assert failed.status is InvocationStatus.FAILED
    assert failed.error is not None
    assert failed.error["type"] == "invocation-interrupted"
    events = (
        await backend.sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    ).events  # type: ignore[union-attr]
    (answer,) = events[-1].get_function_responses()
    assert (answer.id, answer.response["error"]["type"]) == (  # type: ignore[index]
        "call-1",
        "invocation-interrupted",
    )
    # Its session is usable again.
    assert (await _create(store, "inv-b", acquire=True)).acquired
    assert running.session_pk == (await _create(store, "inv-c")).session_pk


async def test_queued_for_workers_runs_in_session_order_and_sessions_in_parallel(
    backend: Backend,
) -> None:
    store = backend.store
    first = await _create(store, "inv-1", for_workers=True)
    await _create(store, "inv-2", for_workers=True)
    await _create(store, "inv-3", ref=S2, for_workers=True)
    assert first.invocation.status is InvocationStatus.QUEUED
    assert (await store.get(S1, "inv-1")).invocation.owner == ""

    claimed, waiting = await store.claim(owner="worker-1", ttl=LONG, max_attempts=3, limit=10)

    assert [(c.stored.invocation.id, c.started) for c in claimed] == [
        ("inv-1", False),
        ("inv-3", False),
    ]
    assert waiting == 1  # inv-2 waits for its session
    got = (await store.get(S1, "inv-1")).invocation
    assert (got.status, got.attempt, got.owner) == (InvocationStatus.RUNNING, 1, "worker-1")
    assert await _claim(store, "worker-2") == []
    await store.finish(fence("inv-1", 1, "worker-1"), first.session_pk, InvocationStatus.COMPLETED)
    assert await _claim(store, "worker-2") == ["inv-2"]


async def test_a_claim_takes_no_more_than_its_limit(backend: Backend) -> None:
    await _create(backend.store, "inv-1", for_workers=True)
    await _create(backend.store, "inv-2", ref=S2, for_workers=True)

    assert await _claim(backend.store, limit=1) == ["inv-1"]
    assert await _claim(backend.store, limit=1) == ["inv-2"]


async def test_a_dead_run_is_taken_over_before_anything_queued_behind_it(
    backend: Backend,
) -> None:
    """A live replica's queued run may not take the session while its dead run waits for a
    takeover: the interrupted invocation goes on first."""
    store = backend.store
    await _create(store, "inv-dead", acquire=True, ttl=EXPIRED)
    queued = await _create(store, "inv-next")

    assert not await store.try_acquire("inv-next", queued.session_pk, "replica-1", LONG)
    assert await _claim(store) == ["inv-dead"]


async def test_a_handed_back_run_is_taken_over_at_once(backend: Backend) -> None:
    store = backend.store
    running = await _create(store, "inv-a", acquire=True)
    assert await _claim(store) == []

    await store.hand_back(fence("inv-a"), running.session_pk)

    assert await _claim(store) == ["inv-a"]
    assert (await store.get(S1, "inv-a")).invocation.attempt == 2


async def test_concurrent_claims_take_each_invocation_once(backend: Backend) -> None:
    store = backend.store
    for n in range(6):
        await store.create(
            SessionRef(APP, "u1", "s1" if n % 2 else "s2"),
            invocation_id=f"inv-{n}",
            mode="background",
            request={},
            request_hash="h",
            idempotency_key=None,
            owner="api",
            ttl=LONG,
            acquire=False,
            for_workers=True,
        )

    results = await asyncio.gather(*(_claim(store, f"worker-{k}") for k in range(4)))

    taken = [i for result in results for i in result]
    assert len(taken) == len(set(taken)) == 2  # one per session: each session's first


async def test_reject_refuses_a_session_with_anything_queued_for_workers(backend: Backend) -> None:
    await _create(backend.store, "inv-1", for_workers=True)

    with pytest.raises(SessionBusy):
        await backend.store.create(
            S1,
            invocation_id="inv-2",
            mode="background",
            request={},
            request_hash="h",
            idempotency_key=None,
            owner="api",
            ttl=LONG,
            acquire=False,
            on_waiting="reject",
            for_workers=True,
        )
    with pytest.raises(InvocationNotFound):  # nothing was written
        await backend.store.get(S1, "inv-2")


# -- fencing (issue 26): the stalled attempt's writes after a takeover ------------------------


async def _taken_over_with_an_open_call(backend: Backend) -> int:
    """inv-a: attempt 1 of replica-1 called a tool, stalled past its lease, and replica-2 took
    it over as attempt 2; the session's key."""
    running = await _create(backend.store, "inv-a", acquire=True, ttl=EXPIRED)
    await _call_a_tool(backend, fenced=True)
    assert await _claim(backend.store) == ["inv-a"]
    return running.session_pk


async def _events(backend: Backend) -> list[Event]:
    session = await backend.sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    return session.events


def _answer(call_id: str) -> Event:
    response = types.FunctionResponse(id=call_id, name="slow", response={"result": "done"})
    return Event(
        author="agent",
        invocation_id="inv-a",
        content=types.Content(role="user", parts=[types.Part(function_response=response)]),
    )


async def test_an_attempt_that_lost_its_lease_appends_nothing(backend: Backend) -> None:
    await _taken_over_with_an_open_call(backend)
    session = await backend.sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    before = [e.seq for e in session.events]

    with pytest.raises(LeaseLost):
        await backend.sessions.append_event(
            session, _answer("call-1"), blind=True, fence=fence("inv-a")
        )

    assert [e.seq for e in await _events(backend)] == before
    # The attempt holding it now writes.
    stored = await backend.sessions.append_event(
        session, _answer("call-1"), blind=True, fence=fence("inv-a", 2, "replica-2")
    )
    assert stored.seq == len(before) + 1


async def test_a_late_final_status_of_a_lost_attempt_changes_nothing(backend: Backend) -> None:
    pk = await _taken_over_with_an_open_call(backend)
    problem = {"type": "database-unavailable", "title": "Database unavailable.", "status": 503}
    before = await _events(backend)

    with pytest.raises(LeaseLost):
        await backend.store.finish(fence("inv-a"), pk, InvocationStatus.FAILED, problem)

    got = (await backend.store.get(S1, "inv-a")).invocation
    assert (got.status, got.attempt, got.owner, got.error) == (
        InvocationStatus.RUNNING,
        2,
        "replica-2",
        None,
    )
    # The open call was not answered with the stale error, and the session's lease still
    # belongs to attempt 2: nothing queued behind it may start.
    assert [e.seq for e in await _events(backend)] == [e.seq for e in before]
    queued = await _create(backend.store, "inv-next")
    assert not await backend.store.try_acquire("inv-next", queued.session_pk, "replica-1", LONG)
    # Nor may it hand the run back or renew it.
    await backend.store.hand_back(fence("inv-a"), pk)
    assert await _claim(backend.store, "replica-3") == []
    assert await backend.store.heartbeat(fence("inv-a"), pk, LONG) == (False, False)


async def test_a_finished_invocation_fences_out_its_own_attempt_retrying(
    backend: Backend,
) -> None:
    """A status retried by the attempt that already recorded another one is dropped too."""
    running = await _create(backend.store, "inv-a", acquire=True)
    await backend.store.finish(fence("inv-a"), running.session_pk, InvocationStatus.COMPLETED)

    with pytest.raises(LeaseLost):
        await backend.store.finish(
            fence("inv-a"), running.session_pk, InvocationStatus.FAILED, {"type": "x"}
        )

    assert (await backend.store.get(S1, "inv-a")).invocation.status is InvocationStatus.COMPLETED
