"""Putting invocations in line: the store's units that create an invocation and resume one.

An invocation waits in its session's line (queued) until it takes the session's lease; `create`
inserts it and, if asked, takes the lease in the same unit, and `resume` puts an ended one back
under its own id. Which ended invocations an answer may continue is decided here, in the unit
that queues it, from the rules of `app.sessions.client_calls`.
"""

import time
from collections.abc import Iterator
from typing import Any, Literal

from app.db.repositories.invocations import InvocationRepository
from app.db.repositories.sessions import SessionRepository
from app.db.uow import Db
from app.errors import (
    DuplicateKey,
    InvocationNotResumable,
    SessionBusy,
    SessionRequiresAction,
)
from app.invocations.models import Invocation, InvocationStatus, SessionRef
from app.invocations.stored import (
    WAITED_FOR_KEY,
    StoredInvocation,
    StoreUnits,
    acquire_lease,
    cancel_waiting,
    invocation_not_found,
    session_key_of,
    session_not_found,
    stored_invocation,
    to_resource,
    waited_for_action,
)
from app.sessions.client_calls import answerable_again, still_waiting
from app.sessions.models import Event

#: Events read per query while looking for answers to an invocation's waiting calls.
ANSWER_PAGE = 200


class QueueStore(StoreUnits):
    """Creating and resuming invocations: what admission writes."""

    async def create(
        self,
        ref: SessionRef,
        *,
        invocation_id: str,
        mode: str,
        request: dict[str, Any],
        request_hash: str,
        idempotency_key: str | None,
        owner: str,
        ttl: float,
        acquire: bool,
        session_pk: int | None = None,
        on_waiting: Literal["reject", "cancel"] = "cancel",
        for_workers: bool = False,
    ) -> StoredInvocation:
        """Insert a queued invocation and, if asked, try to take the lease in the same transaction.

        `for_workers`: queue it for any process that runs invocations instead (no owner, expired
        at once, notified on PostgreSQL); `acquire` must then be False.

        An invocation of the session that waits for the client (`requires_action`) is settled
        first, in the same transaction: `on_waiting="reject"` raises SessionRequiresAction and
        writes nothing; "cancel" cancels it, answering its open calls with the cancellation.

        With `session_pk` None the session is looked up in that transaction (SessionNotFound if
        it is gone), so the common path of every run is one transaction. On an Idempotency-Key
        collision nothing is written and the existing invocation is returned (`created` False).
        """
        key = session_key_of(ref)
        now = time.time()
        row = {
            "id": invocation_id,
            "app_name": ref.app_name,
            "user_id": ref.user_id,
            "session_id": ref.session_id,
            "status": InvocationStatus.QUEUED.value,
            "mode": mode,
            "request": request,
            "request_hash": request_hash,
            "idempotency_key": idempotency_key,
            "error": None,
            "owner": "" if for_workers else owner,
            "cancel_requested": False,
            "create_time": now,
            "start_time": None,
            "end_time": None,
            "lease_expires_at": 0.0 if for_workers else now + ttl,
            "attempt": 0,
            "heartbeat_time": None,
        }

        def unit(db: Db) -> tuple[int, int | None]:
            pk = session_pk if session_pk is not None else SessionRepository(db).pk(key)
            if pk is None:
                raise session_not_found(ref)
            repository = InvocationRepository(db)
            waiting = repository.waiting_in_session(pk)
            if waiting and on_waiting == "reject":
                raise SessionRequiresAction(
                    f"Invocation {waiting[0]!r} of the session waits for an answer: answer it "
                    "(POST .../invocations/{id}/resume), or send the message with "
                    "multitaskStrategy 'interrupt' to cancel it first.",
                    invocationId=waiting[0],
                )
            for waiting_id in waiting:
                detail = "A new message was sent while the invocation waited for an answer."
                cancel_waiting(db, waiting_id, detail, now)
            if for_workers and on_waiting == "reject" and repository.busy(pk):
                raise SessionBusy("Another invocation is running on this session.")
            repository.insert({**row, "session_pk": pk})
            if for_workers:
                repository.notify_session_free(pk, invocation_id)
            return pk, acquire_lease(db, invocation_id, pk, owner, ttl) if acquire else None

        try:
            pk, attempt = await self._uow.write("create", unit)
        except DuplicateKey:
            if idempotency_key is None:
                raise
            existing = await self.find_by_key(ref, idempotency_key)
            if existing is None:
                raise
            return existing
        # The resource as inserted, running if the lease was taken (its start time shows in
        # later reads).
        acquired = attempt is not None
        invocation = Invocation(
            id=invocation_id,
            app_name=ref.app_name,
            user_id=ref.user_id,
            session_id=ref.session_id,
            status=InvocationStatus.RUNNING if acquired else InvocationStatus.QUEUED,
            mode=mode,
            create_time=now,
            attempt=attempt or 0,
            owner=row["owner"],
        )
        return StoredInvocation(invocation, pk, request_hash, created=True, acquired=acquired)

    async def resume(
        self,
        ref: SessionRef,
        invocation_id: str,
        *,
        mode: str,
        owner: str,
        ttl: float,
        wait: bool,
        answers: frozenset[str] = frozenset(),
        request: dict[str, Any] | None = None,
        for_workers: bool = False,
    ) -> StoredInvocation:
        """Put a failed or cancelled invocation back in line under its own id, and try to take
        the lease for it, in one transaction.

        `request` (the resume's body) replaces the stored one: a process taking the invocation
        over runs what it says. `for_workers`: queue it for any process that runs invocations
        instead of taking the lease (see `create`).

        A completed invocation is put back too if it ended waiting for the client (its last
        event names long-running calls, such as `adk_request_credential`, that nothing in the
        session answers yet) and `answers` (the function-response ids of the new message)
        answers at least one of them; or if `answers` answers a long-running tool's call its
        model made, answered or not (a tool that answered "pending" and the client's result,
        sent once or again: ADK continues the invocation that owns the call each time). That
        is decided in the same transaction that queues it, and the queueing only moves it from
        completed, so of two runs answering the same call at once one continues it and the
        other gets InvocationNotResumable.

        Raises InvocationNotFound (no such invocation in the session), InvocationNotResumable
        (it completed and is not waiting for what `answers` answers, or is still queued or
        running) and, unless `wait`, SessionBusy when the session's lease is taken: nothing is
        then changed.
        """
        key = session_key_of(ref)
        now = time.time()

        def unit(db: Db) -> tuple[Any, bool, int, Any]:
            waited_for: Any = None
            last_seq = SessionRepository(db).last_seq(key)
            if last_seq is None:
                raise session_not_found(ref)
            repository = InvocationRepository(db)
            expires = 0.0 if for_workers else now + ttl
            runner = "" if for_workers else owner
            session_pk = repository.resume(
                key, invocation_id, mode=mode, owner=runner, expires=expires, request=request
            )
            if session_pk is None:
                current = repository.get(key, invocation_id)
                if current is None:
                    raise invocation_not_found(invocation_id)
                if _continued_by(db, current, answers):
                    if current.status == InvocationStatus.REQUIRES_ACTION.value:
                        waited_for = current.required_action
                    session_pk = repository.resume(
                        key,
                        invocation_id,
                        mode=mode,
                        owner=runner,
                        expires=expires,
                        # A worker that claims it starts from what it waited for, too.
                        request=(
                            {**request, WAITED_FOR_KEY: waited_for}
                            if request is not None and waited_for is not None
                            else request
                        ),
                        completed=True,
                    )
                if session_pk is None:
                    raise InvocationNotResumable(
                        f"Invocation {invocation_id!r} is {current.status}: only a failed or "
                        "cancelled invocation, or one waiting for function calls the new "
                        "message answers, can be resumed.",
                        invocationStatus=current.status,
                    )
            if for_workers:
                repository.notify_session_free(session_pk, invocation_id)
                return repository.get(key, invocation_id), False, last_seq, waited_for
            acquired = acquire_lease(db, invocation_id, session_pk, owner, ttl) is not None
            if not acquired and not wait:
                # Raised inside the unit, so the invocation stays as it was.
                raise SessionBusy("Another invocation is running on this session.")
            return repository.get(key, invocation_id), acquired, last_seq, waited_for

        row, acquired, last_seq, waited_for = await self._uow.write("resume", unit)
        return StoredInvocation(
            to_resource(row),
            int(row.session_pk),
            row.request_hash,
            acquired=acquired,
            resumed_after=last_seq,
            waited_for=waited_for_action(waited_for),
        )

    async def delete(self, invocation_id: str) -> None:
        """Forget an invocation that never ran (rejected as busy)."""
        await self._uow.write("delete", lambda db: InvocationRepository(db).delete(invocation_id))

    async def find_by_key(self, ref: SessionRef, key: str) -> StoredInvocation | None:
        """The invocation created with this Idempotency-Key in this session."""
        row = await self._uow.read(
            lambda db: InvocationRepository(db).by_idempotency_key(session_key_of(ref), key)
        )
        return None if row is None else stored_invocation(row)


def _continued_by(db: Db, current: Any, answers: frozenset[str]) -> bool:
    """Whether the new message's answers (`answers`: its function-response ids) continue the
    invocation of row `current`: one waiting for the client (`requires_action`) that waits for
    one of them, or a completed one whose calls they answer (`_answerable_calls`)."""
    if not answers:
        return False
    if current.status == InvocationStatus.REQUIRES_ACTION.value:
        action = waited_for_action(current.required_action)
        return action is not None and bool(answers & action.request_call_ids())
    if current.status == InvocationStatus.COMPLETED.value:
        return bool(answers & _answerable_calls(db, int(current.session_pk), str(current.id)))
    return False


def _events_after(db: Db, session_pk: int, after_seq: int) -> Iterator[Event]:
    """The session's events after `after_seq`, in order, read a page at a time as consumed."""
    sessions = SessionRepository(db)
    while True:
        page = sessions.event_page(
            session_pk, after_seq=after_seq, before_seq=None, limit=ANSWER_PAGE, desc=False
        )
        for seq, data in page:
            yield Event.from_stored(seq, data)
        if len(page) < ANSWER_PAGE:
            return
        after_seq = page[-1][0]


def _answerable_calls(db: Db, session_pk: int, invocation_id: str) -> set[str]:
    """The calls of a completed invocation an answer continues it for: those its last event
    lists that nothing answered yet, and those it may take again (`answerable_again`)."""
    sessions = SessionRepository(db)
    found: set[str] = set()
    last = sessions.last_invocation_event(session_pk, invocation_id)
    if last is not None:
        seq, data = last
        found = still_waiting(Event.from_stored(seq, data), _events_after(db, session_pk, seq))
    stored = sessions.invocation_events(session_pk, invocation_id, after_seq=0)
    return found | answerable_again(Event.from_stored(seq, data) for seq, data in stored)


__all__ = ["ANSWER_PAGE", "QueueStore"]
