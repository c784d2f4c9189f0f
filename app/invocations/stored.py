"""What the invocation store's parts share: the rows they turn into resources, and the steps
several of their units take (taking a session's lease, answering an ended invocation's open
calls, cancelling one that waits for the client).

Every function taking a `Db` runs inside the caller's unit of work, so it commits (or not) with
the rest of that unit.
"""

import time
from dataclasses import dataclass
from typing import Any

from app.db.repositories.invocations import InvocationRepository
from app.db.repositories.sessions import SessionRepository
from app.db.tables.sessions import session_key
from app.db.uow import Db, UnitOfWork
from app.errors import InvocationCancelled, InvocationNotFound, SessionNotFound
from app.invocations.models import Invocation, RequiredAction, SessionRef
from app.sessions.function_calls import error_responses, open_function_calls
from app.sessions.models import Event
from app.sessions.storage import event_row, prepare_event

#: Where the stored request of a run that answers a waiting invocation keeps the
#: `requiredAction` it answered (the row's own is cleared while the invocation runs again).
WAITED_FOR_KEY = "waitedFor"
#: The cancellation's detail for an invocation cancelled while it waited for the client.
WAITING_CANCELLED = "The invocation was cancelled while it waited for an answer."


@dataclass(frozen=True)
class StoredInvocation:
    """An invocation with what only the server sees: its session's key and its request's hash."""

    invocation: Invocation
    session_pk: int
    request_hash: str
    #: Made by this call; False when an Idempotency-Key named an existing invocation instead.
    created: bool = False
    #: This call took the session's lease for it (it is running).
    acquired: bool = False
    #: For a resumed invocation, the session's last seq when it was resumed: the events of the
    #: new attempt come after it (0 for a new invocation).
    resumed_after: int = 0
    #: For one resumed while it waited for the client (`requires_action`): what it waited for.
    #: The run starts from these calls, so it can tell what still waits when it ends without
    #: reading the history (`app.sessions.client_calls.PendingCalls`).
    waited_for: RequiredAction | None = None


class StoreUnits:
    """A part of the invocation store: its units of work, over the database it was given."""

    def __init__(self, uow: UnitOfWork) -> None:
        self._uow = uow


def waited_for_action(stored: Any) -> RequiredAction | None:
    """The `requiredAction` a run answered, as a request keeps it under `WAITED_FOR_KEY`."""
    return RequiredAction.model_validate(stored) if isinstance(stored, dict) else None


def answer_open_calls(
    db: Db, invocation_id: str, session_pk: int, error: dict[str, Any], now: float
) -> None:
    """Inside the unit that ends an invocation without success: append one event answering each
    function call it left open with the invocation's error, so the history stays a valid
    call/response sequence for every model provider."""
    sessions = SessionRepository(db)
    stored = sessions.invocation_events(session_pk, invocation_id, after_seq=0)
    calls = open_function_calls(Event.from_stored(seq, data) for seq, data in stored)
    closing = error_responses(invocation_id, calls, error)
    if closing is None:
        return
    wire, _ = prepare_event(closing)
    seq = sessions.claim_next_seq_by_pk(session_pk, now=now)
    if seq is None:  # the session was deleted
        return
    sessions.insert_event(event_row(session_pk, seq, closing, wire))


def cancel_waiting(db: Db, invocation_id: str, detail: str, now: float) -> bool:
    """Inside a write unit: end an invocation that waits for the client (`requires_action`)
    as `cancelled` and answer its open calls with the cancellation, so the status and the
    answers commit together; whether it still waited (else nothing is written)."""
    error = InvocationCancelled(detail).marshal()
    session_pk = InvocationRepository(db).cancel_waiting(invocation_id, error=error, now=now)
    if session_pk is None:
        return False
    answer_open_calls(db, invocation_id, session_pk, error, now)
    return True


def acquire_lease(
    db: Db, invocation_id: str, session_pk: int, owner: str, ttl: float
) -> int | None:
    """Inside a write unit: take the session's lease if this is the session's turn and mark the
    invocation running; the attempt it runs as (None: not its turn, or the session is held)."""
    repository = InvocationRepository(db)
    now = time.time()
    turn = repository.turn(session_pk, now=now)
    if turn is not None and turn != invocation_id:
        return None
    holder = repository.take_lease(
        session_pk, invocation_id, owner=owner, now=now, expires=now + ttl
    )
    if holder != invocation_id:
        return None
    return repository.mark_running(invocation_id, owner=owner, now=now, expires=now + ttl)


def session_key_of(ref: SessionRef) -> dict[str, str]:
    return session_key(ref.app_name, ref.user_id, ref.session_id)


def session_not_found(ref: SessionRef) -> SessionNotFound:
    return SessionNotFound(f"Session {ref.session_id!r} does not exist.")


def invocation_not_found(invocation_id: str) -> InvocationNotFound:
    return InvocationNotFound(f"No invocation {invocation_id!r} in this session.")


def stored_invocation(row: Any) -> StoredInvocation:
    return StoredInvocation(to_resource(row), int(row.session_pk), row.request_hash)


def to_resource(row: Any) -> Invocation:
    """The API view of a row (its columns carry the resource's field names)."""
    return Invocation.model_validate(row, from_attributes=True)


__all__ = [
    "WAITED_FOR_KEY",
    "WAITING_CANCELLED",
    "StoreUnits",
    "StoredInvocation",
    "acquire_lease",
    "answer_open_calls",
    "cancel_waiting",
    "invocation_not_found",
    "session_key_of",
    "session_not_found",
    "stored_invocation",
    "to_resource",
    "waited_for_action",
]
