"""Database operations on invocations and session leases; every method is one transaction.

The lease is what makes "one invocation at a time per session" hold across replicas:
`try_acquire` inserts the session's lease row, or takes it over only if it has expired, in one
atomic upsert; a queued invocation may only try once it is the oldest live queued one of its
session, so `enqueue` is first come, first served across replicas too.
"""

import functools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Row, Table, and_, bindparam, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db import fast
from app.db.engine import DbSession, create_sessionmaker, write_options
from app.db.tables import StorageEvent, StorageInvocation, StorageSessionLease
from app.db.units import Units
from app.errors import InvocationInterrupted, InvocationNotFound, SessionNotFound
from app.invocations.models import Invocation, InvocationStatus
from app.observability.metrics import time_transaction
from app.sessions.base import decode_page_token, encode_page_token
from app.sessions.models import Event
from app.sessions.statements import SESSION_PK, session_key

LIVE = (InvocationStatus.QUEUED.value, InvocationStatus.RUNNING.value)


@dataclass(frozen=True)
class SessionRef:
    """A session addressed by the API."""

    app_name: str
    user_id: str
    session_id: str


_invocations = cast(Table, StorageInvocation.__table__)
_leases = cast(Table, StorageSessionLease.__table__)

# The statements of every run (create, acquire, finish) are built once; SQLAlchemy then reuses
# their compiled form instead of rebuilding and re-keying them per call.
_INSERT_INVOCATION = insert(_invocations)
_OLDEST_QUEUED = (
    select(_invocations.c.id)
    .where(
        _invocations.c.session_pk == bindparam("k_pk"),
        _invocations.c.status == InvocationStatus.QUEUED.value,
        _invocations.c.lease_expires_at > bindparam("k_now"),
    )
    .order_by(_invocations.c.create_time, _invocations.c.id)
    .limit(1)
)
_MARK_RUNNING = (
    update(_invocations)
    .where(_invocations.c.id == bindparam("k_id"))
    .values(
        status=InvocationStatus.RUNNING.value,
        start_time=bindparam("v_now"),
        owner=bindparam("v_owner"),
        lease_expires_at=bindparam("v_expires"),
    )
)
_FINISH = (
    update(_invocations)
    .where(_invocations.c.id == bindparam("k_id"))
    .values(status=bindparam("v_status"), error=bindparam("v_error"), end_time=bindparam("v_now"))
    .returning(*_invocations.c)
)
_RELEASE = delete(_leases).where(
    _leases.c.session_pk == bindparam("k_pk"), _leases.c.invocation_id == bindparam("k_id")
)


@functools.cache  # one statement object per dialect: app.db.fast compiles each once
def _lease_upsert(dialect: str) -> Any:
    """Insert the session's lease, or take it over only if it expired; returns the holder."""
    stmt = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(_leases)
    return stmt.on_conflict_do_update(
        index_elements=["session_pk"],
        set_={
            "invocation_id": stmt.excluded.invocation_id,
            "owner": stmt.excluded.owner,
            "expires_at": stmt.excluded.expires_at,
        },
        where=_leases.c.expires_at < bindparam("k_now"),
    ).returning(_leases.c.invocation_id)


class InvocationStore:
    """Invocation rows and session leases."""

    def __init__(self, db_engine: AsyncEngine) -> None:
        self._sessionmaker = create_sessionmaker(db_engine)
        self._units = Units(db_engine)
        self._dialect = db_engine.dialect.name
        self._lease_upsert = _lease_upsert(self._dialect)

    @asynccontextmanager
    async def _write(self, operation: str) -> AsyncIterator[DbSession]:
        with time_transaction(operation):
            async with self._sessionmaker() as db, db.begin():
                await db.connection(execution_options=write_options)
                yield db

    async def session_pk(self, ref: SessionRef) -> int:
        """The session's key, or SessionNotFound."""
        async with self._sessionmaker() as db:
            pk = await db.scalar(SESSION_PK, session_key(ref.app_name, ref.user_id, ref.session_id))
        if pk is None:
            raise SessionNotFound(f"Session {ref.session_id!r} does not exist.")
        return int(pk)

    async def find_by_key(self, ref: SessionRef, key: str) -> StorageInvocation | None:
        """The invocation created with this Idempotency-Key in this session."""
        async with self._sessionmaker() as db:
            return await db.scalar(
                select(StorageInvocation).where(
                    *_ref_filter(ref), StorageInvocation.idempotency_key == key
                )
            )

    async def get(self, ref: SessionRef, invocation_id: str) -> Invocation:
        """The invocation as a resource, or InvocationNotFound (also for another session's)."""
        async with self._sessionmaker() as db:
            row = await db.scalar(
                select(StorageInvocation).where(
                    *_ref_filter(ref), StorageInvocation.id == invocation_id
                )
            )
        if row is None:
            raise InvocationNotFound(f"No invocation {invocation_id!r} in this session.")
        return to_resource(row)

    async def list_page(
        self, ref: SessionRef, *, page_size: int, page_token: str | None
    ) -> tuple[list[Invocation], str | None]:
        """The session's invocations, newest first."""
        query = select(StorageInvocation).where(*_ref_filter(ref))
        if page_token:
            cursor = decode_page_token(page_token, kind="invocations")
            before_time, before_id = float(cursor.get("t", 0)), str(cursor.get("id", ""))
            query = query.where(
                or_(
                    StorageInvocation.create_time < before_time,
                    and_(
                        StorageInvocation.create_time == before_time,
                        StorageInvocation.id < before_id,
                    ),
                )
            )
        query = query.order_by(
            StorageInvocation.create_time.desc(), StorageInvocation.id.desc()
        ).limit(page_size + 1)
        async with self._sessionmaker() as db:
            rows = list((await db.scalars(query)).all())
        token = None
        if len(rows) > page_size:
            rows = rows[:page_size]
            token = encode_page_token(
                {"k": "invocations", "t": rows[-1].create_time, "id": rows[-1].id}
            )
        return [to_resource(r) for r in rows], token

    async def delete(self, invocation_id: str) -> None:
        """Forget an invocation that never ran (rejected as busy)."""
        async with self._write("delete") as db:
            await db.execute(delete(StorageInvocation).where(StorageInvocation.id == invocation_id))

    async def try_acquire(
        self, invocation_id: str, session_pk: int, owner: str, ttl: float
    ) -> bool:
        """Take the session's lease for `invocation_id` (first come, first served); mark running."""
        return await self._units.write(
            "try_acquire", lambda db: self._acquire(db, invocation_id, session_pk, owner, ttl)
        )

    async def create(
        self, row: StorageInvocation, *, acquire: bool, ttl: float
    ) -> tuple[StorageInvocation | None, bool]:
        """Insert the invocation and, if asked, try to take the lease in the same transaction.

        `row.session_pk` may be None: the session is then looked up in the same transaction
        (SessionNotFound if it is gone) and filled in. Returns (the existing invocation on an
        Idempotency-Key collision, or None; whether the lease was taken). One transaction on the
        common path of every run.
        """

        def unit(db: Connection) -> bool:
            if row.session_pk is None:
                pk = fast.scalar(
                    db,
                    SESSION_PK,
                    session_key(row.app_name, row.user_id, row.session_id),
                )
                if pk is None:
                    raise SessionNotFound(f"Session {row.session_id!r} does not exist.")
                row.session_pk = int(pk)
            fast.execute_many(
                db, _INSERT_INVOCATION, [{c.key: getattr(row, c.key) for c in _invocations.c}]
            )
            return acquire and self._acquire(db, row.id, row.session_pk, row.owner, ttl)

        try:
            acquired = await self._units.write("create", unit)
            if acquired:
                row.status = InvocationStatus.RUNNING.value
            return None, acquired
        except IntegrityError:
            if row.idempotency_key is None:
                raise
            existing = await self.find_by_key(
                SessionRef(row.app_name, row.user_id, row.session_id), row.idempotency_key
            )
            if existing is None:
                raise
            return existing, False

    def _acquire(
        self, db: Connection, invocation_id: str, session_pk: int, owner: str, ttl: float
    ) -> bool:
        now = time.time()
        oldest = fast.scalar(db, _OLDEST_QUEUED, {"k_pk": session_pk, "k_now": now})
        if oldest is not None and oldest != invocation_id:
            return False
        holder = fast.scalar(
            db,
            self._lease_upsert,
            {
                "session_pk": session_pk,
                "invocation_id": invocation_id,
                "owner": owner,
                "expires_at": now + ttl,
                "k_now": now,
            },
        )
        if holder != invocation_id:
            return False
        fast.execute_many(
            db,
            _MARK_RUNNING,
            [{"k_id": invocation_id, "v_now": now, "v_owner": owner, "v_expires": now + ttl}],
        )
        return True

    async def heartbeat(self, invocation_id: str, session_pk: int | None, ttl: float) -> bool:
        """Extend the invocation's (and its session lease's) expiry; return cancel_requested."""
        expires = time.time() + ttl
        async with self._write("heartbeat") as db:
            await db.execute(
                update(StorageInvocation)
                .where(StorageInvocation.id == invocation_id)
                .values(lease_expires_at=expires)
            )
            if session_pk is not None:
                await db.execute(
                    update(StorageSessionLease)
                    .where(
                        StorageSessionLease.session_pk == session_pk,
                        StorageSessionLease.invocation_id == invocation_id,
                    )
                    .values(expires_at=expires)
                )
            cancel = await db.scalar(
                select(StorageInvocation.cancel_requested).where(
                    StorageInvocation.id == invocation_id
                )
            )
        return bool(cancel)

    async def finish(
        self,
        invocation_id: str,
        session_pk: int,
        status: InvocationStatus,
        error: dict[str, Any] | None = None,
    ) -> Invocation | None:
        """Record the outcome, release the session lease; the final resource (None if gone)."""

        def unit(db: Connection) -> Any:
            row = fast.first(
                db,
                _FINISH,
                {
                    "k_id": invocation_id,
                    "v_status": status.value,
                    "v_error": error,
                    "v_now": time.time(),
                },
            )
            fast.execute_many(db, _RELEASE, [{"k_pk": session_pk, "k_id": invocation_id}])
            return row

        row = await self._units.write("finish", unit)
        return to_resource(row) if row is not None else None

    async def request_cancel(self, ref: SessionRef, invocation_id: str) -> Invocation:
        """Flag the invocation for cancellation (its owner acts on it)."""
        async with self._write("request_cancel") as db:
            await db.execute(
                update(StorageInvocation)
                .where(
                    *_ref_filter(ref),
                    StorageInvocation.id == invocation_id,
                    StorageInvocation.status.in_(LIVE),
                )
                .values(cancel_requested=True)
            )
        return await self.get(ref, invocation_id)

    async def reap(self) -> int:
        """Mark live invocations whose owner stopped renewing them as interrupted."""
        now = time.time()
        error = InvocationInterrupted(
            "The server running the invocation stopped before it completed."
        ).marshal()
        async with self._write("reap") as db:
            result = await db.execute(
                update(StorageInvocation)
                .where(
                    StorageInvocation.status.in_(LIVE),
                    StorageInvocation.lease_expires_at < now,
                )
                .values(status=InvocationStatus.FAILED.value, error=error, end_time=now)
            )
            await db.execute(
                delete(StorageSessionLease).where(StorageSessionLease.expires_at < now)
            )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def events(self, session_pk: int, invocation_id: str, after_seq: int) -> list[Event]:
        """The invocation's persisted events after `after_seq`, in order."""
        async with self._sessionmaker() as db:
            rows = (
                await db.execute(
                    select(StorageEvent.seq, StorageEvent.event)
                    .where(
                        StorageEvent.session_pk == session_pk,
                        StorageEvent.invocation_id == invocation_id,
                        StorageEvent.seq > after_seq,
                    )
                    .order_by(StorageEvent.seq)
                )
            ).all()
        return [Event.from_stored(seq, data) for seq, data in rows]


def _ref_filter(ref: SessionRef) -> tuple[Any, ...]:
    return (
        StorageInvocation.app_name == ref.app_name,
        StorageInvocation.user_id == ref.user_id,
        StorageInvocation.session_id == ref.session_id,
    )


def to_resource(row: StorageInvocation | Row[Any]) -> Invocation:
    """The API view of a row."""
    return Invocation(
        id=row.id,
        app_name=row.app_name,
        user_id=row.user_id,
        session_id=row.session_id,
        status=InvocationStatus(row.status),
        mode=row.mode,
        create_time=row.create_time,
        start_time=row.start_time,
        end_time=row.end_time,
        error=row.error,
        cancel_requested=row.cancel_requested,
    )
