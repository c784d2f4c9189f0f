"""Every statement on invocations and session leases.

Statements are built once at import (and registered with the fast path's plan cache). Like the
session repository, parameters are named `k_*` (keys in WHERE clauses) and `v_*` (new values), and
a session is addressed by the `session_key(...)` parameters (`k_app`, `k_user`, `k_id`); an
invocation's own id is `k_invocation`. Status filters are spelled as `=` comparisons rather than
`IN (...)`: an IN list is expanded per execution, which the fast path's precompiled plans cannot do.

Ending an invocation (`release_lease`) also notifies `SESSION_FREE_CHANNEL` that its session
may be free (PostgreSQL's NOTIFY; on SQLite `app.db.local_notify`'s datagrams to the other
processes on the file), so queued runs in other processes try at once instead of at their next
poll; the notification is delivered when the unit commits, never if it rolls back.
"""

from typing import Any, cast

from sqlalchemy import (
    String,
    Table,
    and_,
    bindparam,
    case,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from app.db.local_notify import after_commit
from app.db.sqlite import register
from app.db.tables import StorageInvocation, StorageSessionLease
from app.db.uow import Db

_invocations = cast(Table, StorageInvocation.__table__)
_leases = cast(Table, StorageSessionLease.__table__)

# The values of `app.invocations.models.InvocationStatus` these statements filter on or set (that
# enum lives a layer above; the invocation contract suite would fail if they drifted apart).
_QUEUED = "queued"
_RUNNING = "running"
_COMPLETED = "completed"
_FAILED = "failed"
_CANCELLED = "cancelled"
_REQUIRES_ACTION = "requires_action"

_status = _invocations.c.status
_IS_LIVE = or_(_status == _QUEUED, _status == _RUNNING)
#: `InvocationStatus.resumable`: the invocations a run may continue under their own id.
_RESUMABLE = or_(_status == _FAILED, _status == _CANCELLED)


def _in_session() -> tuple[Any, ...]:
    return (
        _invocations.c.app_name == bindparam("k_app"),
        _invocations.c.user_id == bindparam("k_user"),
        _invocations.c.session_id == bindparam("k_id"),
    )


_INSERT = register(insert(_invocations))
#: Whose turn it is on a session: a running invocation first (even one whose owner died: it is
#: taken over before anything queued behind it starts), else the oldest queued one whose owner
#: still renews it.
_TURN = register(
    select(_invocations.c.id)
    .where(
        _invocations.c.session_pk == bindparam("k_pk"),
        # Implied by the next term, but only this form lets SQLite search the (session_pk,
        # status) index instead of reading every invocation the session ever had (0.6 ms at
        # 8,000 invocations, on every turn; 8 us with it).
        _IS_LIVE,
        or_(
            _status == _RUNNING,
            and_(_status == _QUEUED, _invocations.c.lease_expires_at > bindparam("k_now")),
        ),
    )
    .order_by(
        case((_status == _RUNNING, 0), else_=1), _invocations.c.create_time, _invocations.c.id
    )
    .limit(1)
)
_MARK_RUNNING = register(
    update(_invocations)
    .where(_invocations.c.id == bindparam("k_invocation"))
    .values(
        status=_RUNNING,
        start_time=bindparam("v_now"),
        owner=bindparam("v_owner"),
        lease_expires_at=bindparam("v_expires"),
        heartbeat_time=bindparam("v_now"),
        attempt=_invocations.c.attempt + 1,
    )
    .returning(_invocations.c.attempt)
)


def _fenced() -> tuple[Any, ...]:
    """The fencing condition (see `app.sessions.fence`): the invocation `k_invocation` is live
    and still run by attempt `k_attempt` of `k_owner`, so no takeover happened since."""
    return (
        _invocations.c.id == bindparam("k_invocation"),
        _invocations.c.owner == bindparam("k_owner"),
        _invocations.c.attempt == bindparam("k_attempt"),
        _IS_LIVE,
    )


#: The same as a condition of another statement (a fenced event's seq claim): the invocation
#: row matching the fence, locked FOR SHARE on PostgreSQL as `_HOLDS` does (SQLite ignores the
#: lock; its single writer serializes the two).
FENCE_HOLDS = exists(select(_invocations.c.id).where(*_fenced()).with_for_update(read=True))
#: Whether a fence holds, inside the unit of a run's write. On PostgreSQL the row is locked FOR
#: SHARE until the unit ends, so a takeover (an UPDATE of the row) waits for the write to commit
#: or roll back instead of slipping in between the check and the commit; SQLite's single writer
#: serializes the two anyway.
_HOLDS = select(_invocations.c.id).where(*_fenced())
_HOLDS_FOR = {"sqlite": register(_HOLDS), "postgresql": _HOLDS.with_for_update(read=True)}
#: The invocation's row whatever its session (to tell a fenced write from a deleted session).
_BY_ID = register(select(_invocations).where(_invocations.c.id == bindparam("k_invocation")))
_FINISH = register(
    update(_invocations)
    .where(*_fenced())
    .values(
        status=bindparam("v_status"),
        error=bindparam("v_error"),
        required_action=bindparam("v_required_action"),
        end_time=bindparam("v_now"),
    )
    .returning(*_invocations.c)
)


# Only from the status the caller allows: of two resumes racing for one invocation, one wins, as
# the second's UPDATE finds the row queued or running.
def _resume_statement(condition: Any, *, request: bool) -> Any:
    """Queue the session's invocation named `k_invocation` again if `condition` holds (with
    `request`: storing the resume's request, `v_request`, in place of the earlier one)."""
    new_request: dict[str, Any] = {"request": bindparam("v_request")} if request else {}
    return (
        update(_invocations)
        .where(*_in_session(), _invocations.c.id == bindparam("k_invocation"), condition)
        .values(
            **new_request,
            status=_QUEUED,
            mode=bindparam("v_mode"),
            owner=bindparam("v_owner"),
            error=None,
            required_action=None,
            cancel_requested=False,
            start_time=None,
            end_time=None,
            lease_expires_at=bindparam("v_expires"),
        )
        .returning(_invocations.c.session_pk)
    )


#: A completed invocation continued because the run answers a call it waits for (the caller
#: checked that in the same unit); completed here, so a concurrent resume finds it queued.
_WAITED = or_(_status == _COMPLETED, _status == _REQUIRES_ACTION)
#: (completed?, with a request?) -> statement
_RESUME = {
    (completed, request): register(
        _resume_statement(_WAITED if completed else _RESUMABLE, request=request)
    )
    for completed in (False, True)
    for request in (False, True)
}
_RELEASE_LEASE = register(
    delete(_leases).where(
        _leases.c.session_pk == bindparam("k_pk"),
        _leases.c.invocation_id == bindparam("k_invocation"),
    )
)
#: The PostgreSQL channel `release_lease` notifies; the payload is "<session_pk> <owner>", the
#: owner being the replica whose invocation ended (`parse_session_free` reads it back).
SESSION_FREE_CHANNEL = "agentd_session_free"
# PostgreSQL only, so not registered with the SQLite fast path.
_NOTIFY_SESSION_FREE = select(
    func.pg_notify(
        SESSION_FREE_CHANNEL,
        func.concat(
            bindparam("v_session", type_=String),
            " ",
            select(_invocations.c.owner)
            .where(_invocations.c.id == bindparam("k_invocation"))
            .scalar_subquery(),
        ),
    )
)
_OWNER = register(
    select(_invocations.c.owner).where(_invocations.c.id == bindparam("k_invocation"))
)
_EXTEND_INVOCATION = register(
    update(_invocations)
    .where(*_fenced())
    .values(lease_expires_at=bindparam("v_expires"), heartbeat_time=bindparam("v_now"))
    .returning(_invocations.c.cancel_requested)
)
_EXTEND_LEASE = register(
    update(_leases)
    .where(
        _leases.c.session_pk == bindparam("k_pk"),
        _leases.c.invocation_id == bindparam("k_invocation"),
    )
    .values(expires_at=bindparam("v_expires"))
)
_REQUEST_CANCEL = register(
    update(_invocations)
    .where(*_in_session(), _invocations.c.id == bindparam("k_invocation"), _IS_LIVE)
    .values(cancel_requested=True)
)
#: The session's invocations waiting for the client (a new message must settle them first).
_WAITING_IN_SESSION = register(
    select(_invocations.c.id).where(
        _invocations.c.session_pk == bindparam("k_pk"), _status == _REQUIRES_ACTION
    )
)
#: Invocations that have waited for the client since before `k_cutoff`.
_EXPIRED_WAITING = register(
    select(_invocations)
    .where(_status == _REQUIRES_ACTION, _invocations.c.end_time < bindparam("k_cutoff"))
    .limit(100)
)
_FAIL_WAITING = register(
    update(_invocations)
    .where(_invocations.c.id == bindparam("k_invocation"), _status == _REQUIRES_ACTION)
    .values(
        status=_FAILED,
        error=bindparam("v_error"),
        required_action=None,
        end_time=bindparam("v_now"),
    )
    .returning(_invocations.c.session_pk)
)
_CANCEL_WAITING = register(
    update(_invocations)
    .where(_invocations.c.id == bindparam("k_invocation"), _status == _REQUIRES_ACTION)
    .values(
        status=_CANCELLED,
        error=bindparam("v_error"),
        required_action=None,
        end_time=bindparam("v_now"),
    )
    .returning(_invocations.c.session_pk)
)
#: Any queued or running invocation of the session (whoever owns it).
_LIVE_IN_SESSION = register(
    select(_invocations.c.id)
    .where(_invocations.c.session_pk == bindparam("k_pk"), _IS_LIVE)
    .limit(1)
)
#: Live invocations whose owner stopped renewing them (or that never had one: queued for any
#: worker), oldest first; `_EXPIRED_FOR_CLAIM` locks them on PostgreSQL, skipping rows another
#: process is claiming, so each is claimed by one process.
_EXPIRED = (
    select(_invocations)
    .where(_IS_LIVE, _invocations.c.lease_expires_at < bindparam("k_now"))
    .order_by(_invocations.c.create_time, _invocations.c.id)
    .limit(bindparam("k_limit"))
)
_EXPIRED_FOR_CLAIM = {
    "sqlite": register(_EXPIRED),
    "postgresql": _EXPIRED.with_for_update(skip_locked=True, of=_invocations),
}
#: Take an expired invocation over (only while it is still expired: one winner).
_TAKE_OVER = register(
    update(_invocations)
    .where(
        _invocations.c.id == bindparam("k_invocation"),
        _IS_LIVE,
        _invocations.c.lease_expires_at < bindparam("k_now"),
    )
    .values(
        status=_RUNNING,
        owner=bindparam("v_owner"),
        attempt=_invocations.c.attempt + 1,
        lease_expires_at=bindparam("v_expires"),
        heartbeat_time=bindparam("v_now"),
        start_time=func.coalesce(_invocations.c.start_time, bindparam("v_now")),
    )
    .returning(*_invocations.c)
)
#: Fail one expired invocation (its attempts are used up).
_FAIL_ONE_EXPIRED = register(
    update(_invocations)
    .where(
        _invocations.c.id == bindparam("k_invocation"),
        _IS_LIVE,
        _invocations.c.lease_expires_at < bindparam("k_now"),
    )
    .values(status=_FAILED, error=bindparam("v_error"), end_time=bindparam("v_now"))
    .returning(_invocations.c.session_pk)
)
#: Give an invocation back to the queue (its owner is shutting down): expired at once, so any
#: process takes it over.
_HAND_BACK = register(update(_invocations).where(*_fenced()).values(lease_expires_at=0.0))
_EXPIRE_LEASE = register(
    update(_leases)
    .where(
        _leases.c.session_pk == bindparam("k_pk"),
        _leases.c.invocation_id == bindparam("k_invocation"),
    )
    .values(expires_at=0.0)
)
_GET = register(
    select(_invocations).where(*_in_session(), _invocations.c.id == bindparam("k_invocation"))
)
_WAITING_ROWS = register(select(_invocations).where(*_in_session(), _status == _REQUIRES_ACTION))
_BY_IDEMPOTENCY_KEY = register(
    select(_invocations).where(
        *_in_session(), _invocations.c.idempotency_key == bindparam("k_idempotency_key")
    )
)
# Newest first; the id breaks ties of create_time so pages never repeat or skip a row.
_NEWEST_FIRST = (_invocations.c.create_time.desc(), _invocations.c.id.desc())
_FIRST_PAGE = register(
    select(_invocations).where(*_in_session()).order_by(*_NEWEST_FIRST).limit(bindparam("k_limit"))
)
_NEXT_PAGE = register(
    select(_invocations)
    .where(
        *_in_session(),
        or_(
            _invocations.c.create_time < bindparam("k_before_time"),
            and_(
                _invocations.c.create_time == bindparam("k_before_time"),
                _invocations.c.id < bindparam("k_before_id"),
            ),
        ),
    )
    .order_by(*_NEWEST_FIRST)
    .limit(bindparam("k_limit"))
)
_DELETE = register(delete(_invocations).where(_invocations.c.id == bindparam("k_invocation")))


def _lease_upsert(dialect: Any) -> Any:
    """Insert the session's lease, or take it over only if it expired; returns the holder."""
    stmt = dialect.insert(_leases)
    return register(
        stmt.on_conflict_do_update(
            index_elements=["session_pk"],
            set_={
                "invocation_id": stmt.excluded.invocation_id,
                "owner": stmt.excluded.owner,
                "expires_at": stmt.excluded.expires_at,
            },
            where=_leases.c.expires_at < bindparam("k_now"),
        ).returning(_leases.c.invocation_id)
    )


_TAKE_LEASE = {"sqlite": _lease_upsert(sqlite), "postgresql": _lease_upsert(postgresql)}


class InvocationRepository:
    """Statements on the invocation and lease tables, run on the `Db` of the caller's unit."""

    def __init__(self, db: Db) -> None:
        self._db = db

    # -- invocations ----------------------------------------------------------------------

    def insert(self, row: dict[str, Any]) -> None:
        """Insert an invocation row (DuplicateKey if its id or Idempotency-Key is taken)."""
        self._db.execute(_INSERT, [row])

    def waiting_in_session(self, session_pk: int) -> list[str]:
        """Ids of the session's invocations in `requires_action`."""
        rows = self._db.execute(_WAITING_IN_SESSION, {"k_pk": session_pk}).all()
        return [str(r[0]) for r in rows]

    def expired_waiting(self, *, cutoff: float) -> list[Any]:
        """Rows (at most 100) of invocations waiting for the client since before `cutoff`."""
        return list(self._db.execute(_EXPIRED_WAITING, {"k_cutoff": cutoff}).all())

    def fail_waiting(self, invocation_id: str, *, error: dict[str, Any], now: float) -> int | None:
        """Fail an invocation that waits for the client; its session's key, or None if it no
        longer waits (answered or failed meanwhile, e.g. by another replica)."""
        found = self._db.execute(
            _FAIL_WAITING, {"k_invocation": invocation_id, "v_error": error, "v_now": now}
        ).scalar()
        return None if found is None else int(found)

    def cancel_waiting(
        self, invocation_id: str, *, error: dict[str, Any], now: float
    ) -> int | None:
        """Cancel an invocation that waits for the client; its session's key, or None if it no
        longer waits (answered, settled or cancelled meanwhile: nothing changed)."""
        found = self._db.execute(
            _CANCEL_WAITING, {"k_invocation": invocation_id, "v_error": error, "v_now": now}
        ).scalar()
        return None if found is None else int(found)

    def get(self, session: dict[str, str], invocation_id: str) -> Any | None:
        """The invocation row in the session addressed by `session_key(...)`, or None."""
        return self._db.execute(_GET, {**session, "k_invocation": invocation_id}).first()

    def waiting_rows(self, session: dict[str, str]) -> list[Any]:
        """The rows of the session's invocations in `requires_action`."""
        return list(self._db.execute(_WAITING_ROWS, session).all())

    def by_idempotency_key(self, session: dict[str, str], key: str) -> Any | None:
        """The invocation row created with this Idempotency-Key in the session, or None."""
        return self._db.execute(_BY_IDEMPOTENCY_KEY, {**session, "k_idempotency_key": key}).first()

    def page(
        self, session: dict[str, str], *, before: tuple[float, str] | None, limit: int
    ) -> list[Any]:
        """Up to `limit` rows of the session, newest first, after `before` (create_time, id)."""
        if before is None:
            return list(self._db.execute(_FIRST_PAGE, {**session, "k_limit": limit}).all())
        params = {
            **session,
            "k_before_time": before[0],
            "k_before_id": before[1],
            "k_limit": limit,
        }
        return list(self._db.execute(_NEXT_PAGE, params).all())

    def delete(self, invocation_id: str) -> None:
        """Delete an invocation row."""
        self._db.execute(_DELETE, [{"k_invocation": invocation_id}])

    def turn(self, session_pk: int, *, now: float) -> str | None:
        """The id of the invocation whose turn it is on the session (see `_TURN`), if any."""
        found = self._db.execute(_TURN, {"k_pk": session_pk, "k_now": now}).scalar()
        return None if found is None else str(found)

    def mark_running(self, invocation_id: str, *, owner: str, now: float, expires: float) -> int:
        """Record that `owner` started running the invocation at `now`; its new attempt."""
        params = {
            "k_invocation": invocation_id,
            "v_now": now,
            "v_owner": owner,
            "v_expires": expires,
        }
        return int(self._db.execute(_MARK_RUNNING, params).scalar())

    def holds(self, invocation_id: str, *, owner: str, attempt: int) -> bool:
        """Whether attempt `attempt` of `owner` still holds the invocation's lease (the row stays
        locked against a takeover until the caller's unit ends, on PostgreSQL)."""
        statement = _HOLDS_FOR[self._db.dialect.name]
        params = {"k_invocation": invocation_id, "k_owner": owner, "k_attempt": attempt}
        return self._db.execute(statement, params).first() is not None

    def by_id(self, invocation_id: str) -> Any | None:
        """The invocation's row, whatever its session, or None."""
        return self._db.execute(_BY_ID, {"k_invocation": invocation_id}).first()

    def finish(
        self,
        invocation_id: str,
        *,
        owner: str,
        attempt: int,
        status: str,
        error: dict[str, Any] | None,
        now: float,
        required_action: dict[str, Any] | None = None,
    ) -> Any | None:
        """Record the outcome of attempt `attempt` of `owner`; the updated row, or None if the
        invocation is gone or that attempt no longer holds it (fenced)."""
        params = {
            "k_invocation": invocation_id,
            "k_owner": owner,
            "k_attempt": attempt,
            "v_status": status,
            "v_error": error,
            "v_required_action": required_action,
            "v_now": now,
        }
        return self._db.execute(_FINISH, params).first()

    def resume(
        self,
        session: dict[str, str],
        invocation_id: str,
        *,
        mode: str,
        owner: str,
        expires: float,
        request: dict[str, Any] | None = None,
        completed: bool = False,
    ) -> int | None:
        """Queue a failed or cancelled invocation of the session again, for `owner` to run
        (its create time, and so its place in the session's line, kept); its session's key, or
        None if the session has no such invocation in a resumable status.

        `completed`: instead, one that completed waiting for calls the caller found answered
        by the new run (None if it is no longer completed).
        """
        params = {
            **session,
            "k_invocation": invocation_id,
            "v_mode": mode,
            "v_owner": owner,
            "v_expires": expires,
        }
        if request is not None:
            params["v_request"] = request
        statement = _RESUME[(completed, request is not None)]
        found = self._db.execute(statement, params).scalar()
        return None if found is None else int(found)

    def request_cancel(self, session: dict[str, str], invocation_id: str) -> None:
        """Flag the invocation for cancellation if it is still queued or running."""
        self._db.execute(_REQUEST_CANCEL, [{**session, "k_invocation": invocation_id}])

    def heartbeat(
        self,
        invocation_id: str,
        session_pk: int,
        *,
        owner: str,
        attempt: int,
        now: float,
        expires: float,
    ) -> tuple[bool, bool]:
        """Move the invocation's and its session lease's expiry to `expires` if attempt
        `attempt` of `owner` still holds it; (cancel_requested, still held). A run whose
        invocation another attempt took over (its lease had expired), or that ended meanwhile,
        must stop: the other attempt continues it."""
        params = {
            "k_invocation": invocation_id,
            "k_owner": owner,
            "k_attempt": attempt,
            "v_expires": expires,
            "v_now": now,
        }
        row = self._db.execute(_EXTEND_INVOCATION, params).first()
        if row is None:
            return False, False
        self._db.execute(
            _EXTEND_LEASE,
            [{"k_pk": session_pk, "k_invocation": invocation_id, "v_expires": expires}],
        )
        return bool(row[0]), True

    def busy(self, session_pk: int) -> bool:
        """Whether the session has a queued or running invocation."""
        return self._db.execute(_LIVE_IN_SESSION, {"k_pk": session_pk}).scalar() is not None

    def expired(self, *, now: float, limit: int) -> list[Any]:
        """Up to `limit` live invocations whose lease expired, oldest first, locked for this
        unit on PostgreSQL (rows other units hold are skipped)."""
        statement = _EXPIRED_FOR_CLAIM[self._db.dialect.name]
        return list(self._db.execute(statement, {"k_now": now, "k_limit": limit}).all())

    def take_over(
        self, invocation_id: str, *, owner: str, now: float, expires: float
    ) -> Any | None:
        """Make `owner` run the expired invocation (attempt + 1); its row, or None if it is no
        longer expired (another process took it)."""
        params = {
            "k_invocation": invocation_id,
            "k_now": now,
            "v_owner": owner,
            "v_expires": expires,
            "v_now": now,
        }
        return self._db.execute(_TAKE_OVER, params).first()

    def fail_expired(self, invocation_id: str, *, error: dict[str, Any], now: float) -> int | None:
        """Fail the expired invocation with `error`; its session's key (None if not expired)."""
        params = {"k_invocation": invocation_id, "k_now": now, "v_error": error, "v_now": now}
        found = self._db.execute(_FAIL_ONE_EXPIRED, params).scalar()
        return None if found is None else int(found)

    def hand_back(self, invocation_id: str, session_pk: int, *, owner: str, attempt: int) -> bool:
        """Expire the invocation and its session lease now, for another process to take over,
        if attempt `attempt` of `owner` still holds it (on PostgreSQL, notify
        `SESSION_FREE_CHANNEL`); whether it did."""
        params = {"k_invocation": invocation_id, "k_owner": owner, "k_attempt": attempt}
        if self._db.execute(_HAND_BACK, params).rowcount == 0:
            return False
        self._db.execute(_EXPIRE_LEASE, [{"k_pk": session_pk, "k_invocation": invocation_id}])
        self.notify_session_free(session_pk, invocation_id)
        return True

    # -- session leases -------------------------------------------------------------------

    def take_lease(
        self, session_pk: int, invocation_id: str, *, owner: str, now: float, expires: float
    ) -> str | None:
        """Insert the session's lease, or take over an expired one; the holder's invocation id.

        The holder is None when an unexpired lease of another invocation kept the session.
        """
        statement = _TAKE_LEASE[self._db.dialect.name]
        params = {
            "session_pk": session_pk,
            "invocation_id": invocation_id,
            "owner": owner,
            "expires_at": expires,
            "k_now": now,
        }
        holder = self._db.execute(statement, params).scalar()
        return None if holder is None else str(holder)

    def release_lease(self, session_pk: int, invocation_id: str) -> None:
        """Delete the session's lease if `invocation_id` holds it; on PostgreSQL, notify.

        The notification goes out even when `invocation_id` held no lease: a queued invocation
        that ended (gave up, cancelled) may have been the one the others queued behind.
        """
        self._db.execute(_RELEASE_LEASE, [{"k_pk": session_pk, "k_invocation": invocation_id}])
        self.notify_session_free(session_pk, invocation_id)

    def notify_session_free(self, session_pk: int, invocation_id: str) -> None:
        """Notify `SESSION_FREE_CHANNEL` that the session may have work for any process (a run
        ended, was handed back, or was queued for workers), on commit: PostgreSQL's NOTIFY, or
        on SQLite a datagram to the other processes on the file (`app.db.local_notify`)."""
        if self._db.dialect.name == "postgresql":
            self._db.execute(
                _NOTIFY_SESSION_FREE, {"v_session": str(session_pk), "k_invocation": invocation_id}
            )
            return
        owner = self._db.execute(_OWNER, {"k_invocation": invocation_id}).scalar()
        after_commit(SESSION_FREE_CHANNEL, f"{session_pk} {owner or ''}")


def parse_session_free(payload: str) -> tuple[int, str]:
    """The session key and the owner named by a `SESSION_FREE_CHANNEL` payload."""
    session, _, owner = payload.partition(" ")
    return int(session), owner


__all__ = ["FENCE_HOLDS", "SESSION_FREE_CHANNEL", "InvocationRepository", "parse_session_free"]
