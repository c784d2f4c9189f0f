"""Invocations and session leases in the database; every method is one unit of work.

The lease is what makes "one invocation at a time per session" hold across replicas:
`try_acquire` inserts the session's lease row, or takes it over only if it has expired, in one
atomic upsert; a queued invocation may only try once it is the oldest live queued one of its
session, so `enqueue` is first come, first served across replicas too. The statements live in
`app.db.repositories.invocations`; the store decides which of them form one transaction and
turns rows into resources.

`InvocationStore` is the facade the manager and its parts use, made of named parts: the reads
here; putting invocations in line (`app.invocations.queueing.QueueStore`: create, resume); the
run's lease from taking it to the outcome (`app.invocations.leases.LeaseStore`); and, as
`notices`, PostgreSQL's notifications between processes (`app.invocations.notices`).
"""

import time
from typing import TYPE_CHECKING, Any

from app.db.repositories.invocations import InvocationRepository
from app.db.repositories.sessions import SessionRepository
from app.db.uow import Db, UnitOfWork
from app.invocations.leases import LeaseStore
from app.invocations.models import Invocation, InvocationStatus, SessionRef
from app.invocations.notices import StoreNotices
from app.invocations.queueing import ANSWER_PAGE, QueueStore
from app.invocations.stored import (
    WAITING_CANCELLED,
    StoredInvocation,
    cancel_waiting,
    invocation_not_found,
    session_key_of,
    session_not_found,
    stored_invocation,
    to_resource,
)
from app.pagination import decode_page_token, encode_page_token
from app.sessions.models import Event

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


class InvocationStore(QueueStore, LeaseStore):
    """Invocation rows and session leases."""

    def __init__(self, db_engine: "AsyncEngine") -> None:
        uow = UnitOfWork(db_engine)
        super().__init__(uow)
        #: Notifications between processes (PostgreSQL; nothing on SQLite).
        self.notices = StoreNotices(db_engine, uow.dialect)

    async def session_pk(self, ref: SessionRef) -> int:
        """The session's key, or SessionNotFound."""
        pk = await self._uow.read(lambda db: SessionRepository(db).pk(session_key_of(ref)))
        if pk is None:
            raise session_not_found(ref)
        return pk

    async def get(self, ref: SessionRef, invocation_id: str) -> StoredInvocation:
        """The invocation, or InvocationNotFound (also for another session's)."""
        row = await self._uow.read(
            lambda db: InvocationRepository(db).get(session_key_of(ref), invocation_id)
        )
        if row is None:
            raise invocation_not_found(invocation_id)
        return stored_invocation(row)

    async def waiting(self, ref: SessionRef) -> list[Invocation]:
        """The session's invocations that wait for the client (`requires_action`)."""
        rows = await self._uow.read(
            lambda db: InvocationRepository(db).waiting_rows(session_key_of(ref))
        )
        return [to_resource(row) for row in rows]

    async def owner_of_calls(self, ref: SessionRef, call_ids: frozenset[str]) -> str | None:
        """The id of the invocation that made the latest of the calls `call_ids` names (None:
        the session has no such call): the invocation an ADK-style answer belongs to. The
        history is read newest first, a page at a time, until the call is found."""
        key = session_key_of(ref)

        def unit(db: Db) -> str | None:
            sessions = SessionRepository(db)
            session_pk = sessions.pk(key)
            if session_pk is None:
                return None
            before: int | None = None
            while True:
                page = sessions.event_page(
                    session_pk, after_seq=0, before_seq=before, limit=ANSWER_PAGE, desc=True
                )
                for seq, data in page:
                    event = Event.from_stored(seq, data)
                    if any(call.id in call_ids for call in event.get_function_calls()):
                        return event.invocation_id
                if len(page) < ANSWER_PAGE:
                    return None
                before = page[-1][0]

        return await self._uow.read(unit)

    async def list_page(
        self, ref: SessionRef, *, page_size: int, page_token: str | None
    ) -> tuple[list[Invocation], str | None]:
        """The session's invocations, newest first (SessionNotFound if there is no session)."""
        key = session_key_of(ref)

        def unit(db: Db) -> list[Any]:
            # The session is checked before the token, so a missing session is a 404 whatever
            # the token says.
            if SessionRepository(db).pk(key) is None:
                raise session_not_found(ref)
            before = _page_cursor(page_token) if page_token else None
            return InvocationRepository(db).page(key, before=before, limit=page_size + 1)

        rows = await self._uow.read(unit)
        token = None
        if len(rows) > page_size:
            rows = rows[:page_size]
            token = encode_page_token(
                {"k": "invocations", "t": rows[-1].create_time, "id": rows[-1].id}
            )
        return [to_resource(r) for r in rows], token

    async def request_cancel(self, ref: SessionRef, invocation_id: str) -> Invocation:
        """Cancel the invocation as far as this unit can: a live one is flagged (its owner
        stops it); one waiting for the client (`requires_action`) has no owner to act, so it
        ends `cancelled` here, its open calls answered with the cancellation in the same
        unit, as a cancelled run's are; an ended one is left as it is."""
        key = session_key_of(ref)
        now = time.time()

        def unit(db: Db) -> Any:
            repository = InvocationRepository(db)
            current = repository.get(key, invocation_id)
            if current is None or current.status != InvocationStatus.REQUIRES_ACTION.value:
                repository.request_cancel(key, invocation_id)
            else:
                cancel_waiting(db, invocation_id, WAITING_CANCELLED, now)
            return repository.get(key, invocation_id)

        row = await self._uow.write("request_cancel", unit)
        if row is None:
            raise invocation_not_found(invocation_id)
        return to_resource(row)

    async def events(self, session_pk: int, invocation_id: str, after_seq: int) -> list[Event]:
        """The invocation's persisted events after `after_seq`, in order."""
        stored = await self._uow.read(
            lambda db: SessionRepository(db).invocation_events(
                session_pk, invocation_id, after_seq=after_seq
            )
        )
        return [Event.from_stored(seq, data) for seq, data in stored]


def _page_cursor(page_token: str) -> tuple[float, str]:
    cursor = decode_page_token(page_token, kind="invocations")
    return float(cursor.get("t", 0)), str(cursor.get("id", ""))


__all__ = ["InvocationStore", "StoredInvocation"]
