"""What the InvocationStore test modules share: two sessions, lease lengths, one way to create."""

from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from app.invocations.models import SessionRef
from app.invocations.store import InvocationStore, StoredInvocation
from app.sessions.database import DatabaseSessionService
from app.sessions.fence import Fence

APP = "capital_agent"
S1 = SessionRef(APP, "u1", "s1")
S2 = SessionRef(APP, "u1", "s2")
#: A lease that outlives any test.
LONG = 600.0
#: A lease that has already expired when it is taken: another process may take it over at once.
EXPIRED = -60.0


@dataclass(frozen=True)
class Backend:
    """The store under test and the session service sharing its database."""

    store: InvocationStore
    sessions: DatabaseSessionService


async def open_backend(db_engine: AsyncEngine) -> AsyncIterator[Backend]:
    """An InvocationStore and a session service on one fresh database, with sessions s1, s2."""
    sessions = DatabaseSessionService(db_engine)
    for ref in (S1, S2):
        await sessions.create_session(
            app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id
        )
    try:
        yield Backend(InvocationStore(db_engine), sessions)
    finally:
        await sessions.close()


async def create_invocation(
    store: InvocationStore,
    invocation_id: str,
    *,
    ref: SessionRef = S1,
    acquire: bool = False,
    ttl: float = LONG,
    idempotency_key: str | None = None,
    request_hash: str = "hash-1",
    for_workers: bool = False,
) -> StoredInvocation:
    """An invocation of `ref` created by replica-1, its message its own id."""
    return await store.create(
        ref,
        invocation_id=invocation_id,
        mode="background",
        request={"newMessage": {"role": "user", "parts": [{"text": invocation_id}]}},
        request_hash=request_hash,
        idempotency_key=idempotency_key,
        owner="replica-1",
        ttl=ttl,
        acquire=acquire,
        for_workers=for_workers,
    )


def fence(invocation_id: str, attempt: int = 1, owner: str = "replica-1") -> Fence:
    """The fencing token of attempt `attempt` of `owner` (replica-1 runs what it creates)."""
    return Fence(invocation_id, owner, attempt)
