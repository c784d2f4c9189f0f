"""`InvocationStore.resume`, over every database backend (`db_engine`).

A failed or cancelled invocation goes back in line under its own id, in one transaction with
the try for its session's lease; anything else is refused and changes nothing.
"""

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.errors import InvocationNotFound, InvocationNotResumable, SessionBusy, SessionNotFound
from app.invocations.models import InvocationStatus, SessionRef
from app.invocations.store import InvocationStore, StoredInvocation
from app.sessions.database import DatabaseSessionService
from app.sessions.models import Event
from tests.invocations.store_helpers import fence

APP = "capital_agent"
S1 = SessionRef(APP, "u1", "s1")
S2 = SessionRef(APP, "u1", "s2")
LONG = 600.0
PROBLEM = {"type": "invocation-failed", "title": "Invocation failed.", "status": 500}


@pytest.fixture
async def sessions(db_engine: AsyncEngine) -> AsyncIterator[DatabaseSessionService]:
    """The session service on the store's database, with sessions s1 and s2."""
    service = DatabaseSessionService(db_engine)
    for ref in (S1, S2):
        await service.create_session(
            app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id
        )
    try:
        yield service
    finally:
        await service.close()


@pytest.fixture
def store(db_engine: AsyncEngine, sessions: DatabaseSessionService) -> InvocationStore:
    """The store under test (sessions made first)."""
    del sessions
    return InvocationStore(db_engine)


async def _create(
    store: InvocationStore, invocation_id: str, *, acquire: bool = True, ref: SessionRef = S1
) -> StoredInvocation:
    return await store.create(
        ref,
        invocation_id=invocation_id,
        mode="background",
        request={"newMessage": {"role": "user", "parts": [{"text": invocation_id}]}},
        request_hash="hash-1",
        idempotency_key=None,
        owner="replica-1",
        ttl=LONG,
        acquire=acquire,
    )


async def _ended(store: InvocationStore, invocation_id: str, status: InvocationStatus) -> None:
    """An invocation that ran and ended with `status`."""
    stored = await _create(store, invocation_id)
    error = None if status is InvocationStatus.COMPLETED else PROBLEM
    await store.finish(fence(invocation_id), stored.session_pk, status, error)


async def _resume(
    store: InvocationStore, invocation_id: str, *, wait: bool = False, ref: SessionRef = S1
) -> StoredInvocation:
    return await store.resume(
        ref, invocation_id, mode="wait", owner="replica-2", ttl=LONG, wait=wait
    )


@pytest.mark.parametrize("status", [InvocationStatus.FAILED, InvocationStatus.CANCELLED])
async def test_a_failed_or_cancelled_invocation_resumes_running_under_its_own_id(
    store: InvocationStore, sessions: DatabaseSessionService, status: InvocationStatus
) -> None:
    await _ended(store, "inv-a", status)
    ended = (await store.get(S1, "inv-a")).invocation
    session = await sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    await sessions.append_event(session, Event(author="user", invocation_id="inv-a"))

    resumed = await _resume(store, "inv-a")

    assert resumed.acquired
    assert resumed.resumed_after == 1  # the session's last seq when it resumed
    invocation = resumed.invocation
    assert invocation.id == "inv-a"
    assert invocation.status is InvocationStatus.RUNNING
    assert invocation.mode == "wait"
    assert invocation.error is None
    assert invocation.end_time is None
    assert invocation.start_time is not None
    assert invocation.create_time == ended.create_time  # its place in the session's line
    assert (await store.get(S1, "inv-a")).invocation == invocation
    # It holds the session's lease: a new invocation queues behind it.
    assert not (await _create(store, "inv-b")).acquired


@pytest.mark.parametrize("status", list(InvocationStatus))
async def test_only_the_resumable_statuses_resume(
    store: InvocationStore, status: InvocationStatus
) -> None:
    if status is InvocationStatus.QUEUED:
        await _create(store, "holder")
        await _create(store, "inv-a", acquire=False)
    elif status is InvocationStatus.RUNNING:
        await _create(store, "inv-a")
    else:
        await _ended(store, "inv-a", status)
    before = (await store.get(S1, "inv-a")).invocation
    assert before.status is status

    if status.resumable:
        assert (await _resume(store, "inv-a", wait=True)).invocation.status in {
            InvocationStatus.RUNNING,
            InvocationStatus.QUEUED,
        }
        return
    with pytest.raises(InvocationNotResumable) as refused:
        await _resume(store, "inv-a", wait=True)
    assert refused.value.extras["invocationStatus"] == status.value
    assert (await store.get(S1, "inv-a")).invocation == before


async def test_a_resume_on_a_busy_session_is_session_busy_and_changes_nothing(
    store: InvocationStore,
) -> None:
    await _ended(store, "inv-a", InvocationStatus.FAILED)
    before = (await store.get(S1, "inv-a")).invocation
    await _create(store, "inv-b")

    with pytest.raises(SessionBusy):
        await _resume(store, "inv-a")

    assert (await store.get(S1, "inv-a")).invocation == before


async def test_a_resume_that_may_wait_queues_and_goes_first_when_the_session_frees(
    store: InvocationStore,
) -> None:
    await _ended(store, "inv-a", InvocationStatus.FAILED)
    running = await _create(store, "inv-b")
    await _create(store, "inv-c", acquire=False)

    resumed = await _resume(store, "inv-a", wait=True)

    assert not resumed.acquired
    assert resumed.invocation.status is InvocationStatus.QUEUED
    await store.finish(fence("inv-b"), running.session_pk, InvocationStatus.COMPLETED)
    # Created before inv-c, so its turn comes first.
    assert not await store.try_acquire("inv-c", running.session_pk, "replica-1", LONG)
    assert await store.try_acquire("inv-a", running.session_pk, "replica-2", LONG)


async def test_an_unknown_or_another_sessions_invocation_is_not_found(
    store: InvocationStore,
) -> None:
    await _create(store, "inv-s2", ref=S2)
    stored = await store.get(S2, "inv-s2")
    await store.finish(fence("inv-s2"), stored.session_pk, InvocationStatus.FAILED, PROBLEM)

    for invocation_id in ("nope", "inv-s2"):
        with pytest.raises(InvocationNotFound):
            await _resume(store, invocation_id)
    with pytest.raises(SessionNotFound):
        await _resume(store, "inv-s2", ref=SessionRef(APP, "u1", "gone"))
    assert (await store.get(S2, "inv-s2")).invocation.status is InvocationStatus.FAILED


async def test_of_two_resumes_racing_for_one_invocation_one_wins(store: InvocationStore) -> None:
    await _ended(store, "inv-a", InvocationStatus.CANCELLED)

    results = await asyncio.gather(
        _resume(store, "inv-a", wait=True),
        _resume(store, "inv-a", wait=True),
        return_exceptions=True,
    )

    won = [r for r in results if isinstance(r, StoredInvocation)]
    lost = [r for r in results if isinstance(r, InvocationNotResumable)]
    assert (len(won), len(lost)) == (1, 1)
    assert lost[0].extras["invocationStatus"] == "running"
