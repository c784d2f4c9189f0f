"""Invocations and session leases in the database; every method is one unit of work.

The lease is what makes "one invocation at a time per session" hold across replicas:
`try_acquire` inserts the session's lease row, or takes it over only if it has expired, in one
atomic upsert; a queued invocation may only try once it is the oldest live queued one of its
session, so `enqueue` is first come, first served across replicas too. The statements live in
`app.db.repositories.invocations`; this module decides which of them form one transaction and
turns rows into resources. On PostgreSQL it also listens for other replicas' releases
(`listen_for_free_sessions`), so the manager can wake the runs queued here.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from app.db.notifications import PostgresListener
from app.db.repositories.invocations import (
    SESSION_FREE_CHANNEL,
    InvocationRepository,
    parse_session_free,
)
from app.db.repositories.sessions import SessionRepository
from app.db.tables.sessions import session_key
from app.db.uow import Db, UnitOfWork
from app.errors import (
    DuplicateKey,
    InvocationCancelled,
    InvocationInterrupted,
    InvocationNotFound,
    InvocationNotResumable,
    LeaseLost,
    SessionBusy,
    SessionNotFound,
    SessionRequiresAction,
)
from app.invocations.models import Invocation, InvocationStatus, RequiredAction, SessionRef
from app.observability.metrics import fenced_write
from app.pagination import decode_page_token, encode_page_token
from app.sessions.client_calls import answered_ids, is_waiting_event
from app.sessions.fence import Fence, lease_lost
from app.sessions.function_calls import error_responses, open_function_calls
from app.sessions.models import Event
from app.sessions.storage import event_row, prepare_event

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


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


#: PostgreSQL channels, each payload an invocation id: it committed events or ended; a process
#: follows its events (the process running it then announces them).
EVENTS_CHANNEL = "agentd_invocation_events"
FOLLOW_CHANNEL = "agentd_invocation_follow"


@dataclass(frozen=True)
class Claimed:
    """An invocation this process took over (`InvocationStore.claim`)."""

    stored: StoredInvocation
    #: The stored request: what the run was asked to do (its latest resume's, if resumed).
    request: dict[str, Any]
    #: It had started before (a takeover, resumed from its history); False: it was only queued.
    started: bool


class InvocationStore:
    """Invocation rows and session leases."""

    def __init__(self, db_engine: "AsyncEngine") -> None:
        self._db_engine = db_engine
        self._uow = UnitOfWork(db_engine)
        self._listener: PostgresListener | None = None

    async def session_pk(self, ref: SessionRef) -> int:
        """The session's key, or SessionNotFound."""
        pk = await self._uow.read(lambda db: SessionRepository(db).pk(_session_key(ref)))
        if pk is None:
            raise _session_not_found(ref)
        return pk

    async def find_by_key(self, ref: SessionRef, key: str) -> StoredInvocation | None:
        """The invocation created with this Idempotency-Key in this session."""
        row = await self._uow.read(
            lambda db: InvocationRepository(db).by_idempotency_key(_session_key(ref), key)
        )
        return None if row is None else _stored(row)

    async def get(self, ref: SessionRef, invocation_id: str) -> StoredInvocation:
        """The invocation, or InvocationNotFound (also for another session's)."""
        row = await self._uow.read(
            lambda db: InvocationRepository(db).get(_session_key(ref), invocation_id)
        )
        if row is None:
            raise _invocation_not_found(invocation_id)
        return _stored(row)

    async def waiting(self, ref: SessionRef) -> list[Invocation]:
        """The session's invocations that wait for the client (`requires_action`)."""
        rows = await self._uow.read(
            lambda db: InvocationRepository(db).waiting_rows(_session_key(ref))
        )
        return [_to_resource(row) for row in rows]

    async def owner_of_calls(self, ref: SessionRef, call_ids: frozenset[str]) -> str | None:
        """The id of the invocation that made the latest of the calls `call_ids` names (None:
        the session has no such call): the invocation an ADK-style answer belongs to. The
        history is read newest first, a page at a time, until the call is found."""
        key = _session_key(ref)

        def unit(db: Db) -> str | None:
            sessions = SessionRepository(db)
            session_pk = sessions.pk(key)
            if session_pk is None:
                return None
            before: int | None = None
            while True:
                page = sessions.event_page(
                    session_pk, after_seq=0, before_seq=before, limit=_ANSWER_PAGE, desc=True
                )
                for seq, data in page:
                    event = Event.from_stored(seq, data)
                    if any(call.id in call_ids for call in event.get_function_calls()):
                        return event.invocation_id
                if len(page) < _ANSWER_PAGE:
                    return None
                before = page[-1][0]

        return await self._uow.read(unit)

    async def list_page(
        self, ref: SessionRef, *, page_size: int, page_token: str | None
    ) -> tuple[list[Invocation], str | None]:
        """The session's invocations, newest first (SessionNotFound if there is no session)."""
        key = _session_key(ref)

        def unit(db: Db) -> list[Any]:
            # The session is checked before the token, so a missing session is a 404 whatever
            # the token says.
            if SessionRepository(db).pk(key) is None:
                raise _session_not_found(ref)
            before = _page_cursor(page_token) if page_token else None
            return InvocationRepository(db).page(key, before=before, limit=page_size + 1)

        rows = await self._uow.read(unit)
        token = None
        if len(rows) > page_size:
            rows = rows[:page_size]
            token = encode_page_token(
                {"k": "invocations", "t": rows[-1].create_time, "id": rows[-1].id}
            )
        return [_to_resource(r) for r in rows], token

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
        at once, announced on PostgreSQL); `acquire` must then be False.

        An invocation of the session that waits for the client (`requires_action`) is settled
        first, in the same transaction: `on_waiting="reject"` raises SessionRequiresAction and
        writes nothing; "cancel" cancels it, answering its open calls with the cancellation.

        With `session_pk` None the session is looked up in that transaction (SessionNotFound if
        it is gone), so the common path of every run is one transaction. On an Idempotency-Key
        collision nothing is written and the existing invocation is returned (`created` False).
        """
        key = _session_key(ref)
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
                raise _session_not_found(ref)
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
                error = InvocationCancelled(
                    "A new message was sent while the invocation waited for an answer."
                ).marshal()
                repository.cancel_waiting(waiting_id, error=error, now=now)
                _answer_open_calls(db, waiting_id, pk, error, now)
            if for_workers and on_waiting == "reject" and repository.busy(pk):
                raise SessionBusy("Another invocation is running on this session.")
            repository.insert({**row, "session_pk": pk})
            if for_workers:
                repository.announce(pk, invocation_id)
            return pk, _acquire(db, invocation_id, pk, owner, ttl) if acquire else None

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
        key = _session_key(ref)
        now = time.time()

        def unit(db: Db) -> tuple[Any, bool, int, Any]:
            waited_for: Any = None
            last_seq = SessionRepository(db).last_seq(key)
            if last_seq is None:
                raise _session_not_found(ref)
            repository = InvocationRepository(db)
            expires = 0.0 if for_workers else now + ttl
            runner = "" if for_workers else owner
            session_pk = repository.resume(
                key, invocation_id, mode=mode, owner=runner, expires=expires, request=request
            )
            if session_pk is None:
                current = repository.get(key, invocation_id)
                if current is None:
                    raise _invocation_not_found(invocation_id)
                if answers and (
                    (
                        current.status == InvocationStatus.REQUIRES_ACTION.value
                        and answers & _required_call_ids(current.required_action)
                    )
                    or (
                        current.status == InvocationStatus.COMPLETED.value
                        and answers
                        & (
                            _waiting_calls(db, int(current.session_pk), invocation_id)
                            | _long_running_tool_calls(db, int(current.session_pk), invocation_id)
                        )
                    )
                ):
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
                            {**request, _WAITED_FOR_KEY: waited_for}
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
                repository.announce(session_pk, invocation_id)
                return repository.get(key, invocation_id), False, last_seq, waited_for
            acquired = _acquire(db, invocation_id, session_pk, owner, ttl) is not None
            if not acquired and not wait:
                # Raised inside the unit, so the invocation stays as it was.
                raise SessionBusy("Another invocation is running on this session.")
            return repository.get(key, invocation_id), acquired, last_seq, waited_for

        row, acquired, last_seq, waited_for = await self._uow.write("resume", unit)
        return StoredInvocation(
            _to_resource(row),
            int(row.session_pk),
            row.request_hash,
            acquired=acquired,
            resumed_after=last_seq,
            waited_for=_waited_for(waited_for),
        )

    async def delete(self, invocation_id: str) -> None:
        """Forget an invocation that never ran (rejected as busy)."""
        await self._uow.write("delete", lambda db: InvocationRepository(db).delete(invocation_id))

    async def try_acquire(
        self, invocation_id: str, session_pk: int, owner: str, ttl: float
    ) -> int | None:
        """Take the session's lease for `invocation_id` (first come, first served) and mark it
        running; the attempt it runs as (its fencing token), None if the session is not free."""
        return await self._uow.write(
            "try_acquire", lambda db: _acquire(db, invocation_id, session_pk, owner, ttl)
        )

    async def heartbeat(self, fence: Fence, session_pk: int, ttl: float) -> tuple[bool, bool]:
        """Extend the invocation's (and its session lease's) expiry while `fence` holds;
        (cancel_requested, still held). A heartbeat that finds the fence broken is counted as a
        fenced write."""
        now = time.time()
        cancel, held = await self._uow.write(
            "heartbeat",
            lambda db: InvocationRepository(db).heartbeat(
                fence.invocation_id,
                session_pk,
                owner=fence.owner,
                attempt=fence.attempt,
                now=now,
                expires=now + ttl,
            ),
        )
        if not held:
            fenced_write("heartbeat")
        return cancel, held

    async def claim(
        self, *, owner: str, ttl: float, max_attempts: int, limit: int
    ) -> "tuple[list[Claimed], int]":
        """Take over up to `limit` live invocations whose owner stopped renewing them (or that
        were queued for any worker), oldest first, in one transaction: each becomes `owner`'s,
        running, attempt + 1, with its session's lease. One whose attempts are used up
        (`max_attempts`) is failed instead with `invocation-interrupted`, its open calls
        answered. An invocation whose session is held by another live run, or that is not its
        session's turn, is left for later. On PostgreSQL the candidates are locked with SKIP
        LOCKED, so concurrent claimers never wait for each other or take the same one.

        Returns what it took, and how many expired invocations it saw (the queue's depth, as
        far as it looked)."""
        now = time.time()
        error = InvocationInterrupted(
            f"The invocation was interrupted {max_attempts} time(s): its owner stopped before "
            "it completed."
        ).marshal()

        def unit(db: Db) -> tuple[list[Claimed], int]:
            repository = InvocationRepository(db)
            claimed: list[Claimed] = []
            rows = repository.expired(now=now, limit=max(limit, 1) * 4)
            for row in rows:
                invocation_id, session_pk = str(row.id), int(row.session_pk)
                started = row.status == InvocationStatus.RUNNING.value
                if started and int(row.attempt) >= max_attempts:
                    if repository.fail_expired(invocation_id, error=error, now=now) is not None:
                        _answer_open_calls(db, invocation_id, session_pk, error, now)
                        repository.release_lease(session_pk, invocation_id)
                    continue
                if len(claimed) >= limit:
                    continue
                turn = repository.turn(session_pk, now=now)
                if turn is not None and turn != invocation_id:
                    continue
                holder = repository.take_lease(
                    session_pk, invocation_id, owner=owner, now=now, expires=now + ttl
                )
                if holder != invocation_id:
                    continue
                taken = repository.take_over(invocation_id, owner=owner, now=now, expires=now + ttl)
                if taken is None:
                    repository.release_lease(session_pk, invocation_id)
                    continue
                request = dict(taken.request or {})
                stored = StoredInvocation(
                    _to_resource(taken),
                    session_pk,
                    taken.request_hash,
                    acquired=True,
                    waited_for=_waited_for(request.pop(_WAITED_FOR_KEY, None)),
                )
                claimed.append(Claimed(stored, request, started))
            return claimed, len(rows) - len(claimed)

        return await self._uow.write("claim", unit)

    async def hand_back(self, fence: Fence, session_pk: int) -> None:
        """Give the invocation back while `fence` holds it (the process shuts down): another
        process takes it over at once and resumes it from its last committed event."""
        handed = await self._uow.write(
            "hand_back",
            lambda db: InvocationRepository(db).hand_back(
                fence.invocation_id, session_pk, owner=fence.owner, attempt=fence.attempt
            ),
        )
        if not handed:
            fenced_write("hand_back")

    async def finish(
        self,
        fence: Fence,
        session_pk: int,
        status: InvocationStatus,
        error: dict[str, Any] | None = None,
        required_action: dict[str, Any] | None = None,
    ) -> Invocation | None:
        """Record the outcome, answer the calls a failure left open and release the session
        lease, in one unit and only while `fence` holds; the final resource (None if the
        invocation is gone with its session).

        `required_action`: with status `requires_action`, the calls the client must answer.

        Raises:
            LeaseLost: another attempt holds the invocation now (or it ended): nothing was
                written, and nothing should be retried.
        """
        invocation_id = fence.invocation_id
        now = time.time()

        def unit(db: Db) -> Any:
            repository = InvocationRepository(db)
            row = repository.finish(
                invocation_id,
                owner=fence.owner,
                attempt=fence.attempt,
                status=status.value,
                error=error,
                now=now,
                required_action=required_action,
            )
            if row is None:
                if repository.by_id(invocation_id) is not None:
                    raise lease_lost(fence.invocation_id, fence.attempt)
                return None
            if error is not None:
                _answer_open_calls(db, invocation_id, session_pk, error, now)
            repository.release_lease(session_pk, invocation_id)
            return row

        try:
            row = await self._uow.write("finish", unit)
        except LeaseLost:
            fenced_write("status")
            raise
        return _to_resource(row) if row is not None else None

    async def request_cancel(self, ref: SessionRef, invocation_id: str) -> Invocation:
        """Flag the invocation for cancellation if it is live (its owner acts on it)."""
        key = _session_key(ref)

        def unit(db: Db) -> Any:
            repository = InvocationRepository(db)
            repository.request_cancel(key, invocation_id)
            return repository.get(key, invocation_id)

        row = await self._uow.write("request_cancel", unit)
        if row is None:
            raise _invocation_not_found(invocation_id)
        return _to_resource(row)

    async def expired_waiting(self, timeout: float) -> list[Invocation]:
        """Invocations that have waited for the client longer than `timeout` seconds."""
        cutoff = time.time() - timeout
        rows = await self._uow.read(
            lambda db: InvocationRepository(db).expired_waiting(cutoff=cutoff)
        )
        return [_to_resource(row) for row in rows]

    async def fail_waiting(self, invocation_id: str, error: dict[str, Any]) -> bool:
        """Fail an invocation that still waits for the client, answering its open calls with
        `error` in the same transaction; whether it did (another replica may have first)."""
        now = time.time()

        def unit(db: Db) -> bool:
            session_pk = InvocationRepository(db).fail_waiting(invocation_id, error=error, now=now)
            if session_pk is None:
                return False
            _answer_open_calls(db, invocation_id, session_pk, error, now)
            return True

        return bool(await self._uow.write("fail_waiting", unit))

    async def events(self, session_pk: int, invocation_id: str, after_seq: int) -> list[Event]:
        """The invocation's persisted events after `after_seq`, in order."""
        stored = await self._uow.read(
            lambda db: SessionRepository(db).invocation_events(
                session_pk, invocation_id, after_seq=after_seq
            )
        )
        return [Event.from_stored(seq, data) for seq, data in stored]

    async def listen_for_free_sessions(
        self,
        on_free: Callable[[int, str], None],
        *,
        on_connect: Callable[[], None],
        on_events: Callable[[str], None] | None = None,
        on_follow: Callable[[str], None] | None = None,
    ) -> None:
        """On PostgreSQL, call `on_free(session_pk, owner)` each time any replica ends an
        invocation (`owner` is that replica), and `on_events(invocation_id)` /
        `on_follow(invocation_id)` for what `announce` sends; elsewhere do nothing.

        Args:
            on_free: runs on the event loop for every notification; keep it short.
            on_connect: runs whenever listening (re)starts: what was sent while the connection
                was down is lost, so the caller should act as if every session may be free.
            on_events: an invocation committed events or ended (its readers may read on).
            on_follow: a process follows an invocation's events (its runner should announce).
        """
        if self._uow.dialect != "postgresql" or self._listener is not None:
            return

        def deliver(payload: str) -> None:
            on_free(*parse_session_free(payload))

        also = {
            channel: callback
            for channel, callback in ((EVENTS_CHANNEL, on_events), (FOLLOW_CHANNEL, on_follow))
            if callback is not None
        }
        self._listener = PostgresListener(
            self._db_engine,
            SESSION_FREE_CHANNEL,
            on_notify=deliver,
            on_connect=on_connect,
            also=also,
        )
        await self._listener.start()

    @property
    def listening(self) -> bool:
        """Whether notifications can be heard (PostgreSQL, connected at least once)."""
        return self._listener is not None and self._listener.connects > 0

    async def announce(self, channel: str, invocation_ids: Sequence[str]) -> bool:
        """Notify `channel` (EVENTS_CHANNEL or FOLLOW_CHANNEL) once per invocation id, on the
        listening connection; whether it was sent (never on SQLite)."""
        if self._listener is None:
            return False
        return await self._listener.notify(channel, invocation_ids)

    async def stop_listening(self) -> None:
        """Stop what `listen_for_free_sessions` started."""
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None


#: Events read per query while looking for answers to an invocation's waiting calls.
_ANSWER_PAGE = 200
#: Where the stored request of a run that answers a waiting invocation keeps the
#: `requiredAction` it answered (the row's own is cleared while the invocation runs again).
_WAITED_FOR_KEY = "waitedFor"


def _waited_for(stored: Any) -> RequiredAction | None:
    return RequiredAction.model_validate(stored) if isinstance(stored, dict) else None


def _required_call_ids(required_action: dict[str, Any] | None) -> set[str]:
    """The ids the client's function responses answer, of a stored `requiredAction`."""
    calls = (required_action or {}).get("calls") or []
    return {str(c.get("requestCallId")) for c in calls if c.get("requestCallId")}


def _waiting_calls(db: Db, session_pk: int, invocation_id: str) -> set[str]:
    """The long-running calls the invocation's last event names that no later event of the
    session answers: what a completed invocation still waits for."""
    sessions = SessionRepository(db)
    last = sessions.last_invocation_event(session_pk, invocation_id)
    if last is None:
        return set()
    after, data = last
    waiting = set(Event.from_stored(after, data).long_running_tool_ids or ())
    while waiting:
        page = sessions.event_page(
            session_pk, after_seq=after, before_seq=None, limit=_ANSWER_PAGE, desc=False
        )
        for seq, later in page:
            waiting -= answered_ids(Event.from_stored(seq, later))
        if len(page) < _ANSWER_PAGE:
            break
        after = page[-1][0]
    return waiting


def _long_running_tool_calls(db: Db, session_pk: int, invocation_id: str) -> set[str]:
    """The ids of the long-running tool calls the invocation's model responses made (not the
    framework's own client calls, whose answers have rules of their own)."""
    stored = SessionRepository(db).invocation_events(session_pk, invocation_id, after_seq=0)
    calls: set[str] = set()
    for seq, data in stored:
        event = Event.from_stored(seq, data)
        if event.long_running_tool_ids and not is_waiting_event(event):
            made = {call.id for call in event.get_function_calls() if call.id}
            calls |= made & set(event.long_running_tool_ids)
    return calls


def _answer_open_calls(
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


def _acquire(db: Db, invocation_id: str, session_pk: int, owner: str, ttl: float) -> int | None:
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


def _session_key(ref: SessionRef) -> dict[str, str]:
    return session_key(ref.app_name, ref.user_id, ref.session_id)


def _session_not_found(ref: SessionRef) -> SessionNotFound:
    return SessionNotFound(f"Session {ref.session_id!r} does not exist.")


def _invocation_not_found(invocation_id: str) -> InvocationNotFound:
    return InvocationNotFound(f"No invocation {invocation_id!r} in this session.")


def _page_cursor(page_token: str) -> tuple[float, str]:
    cursor = decode_page_token(page_token, kind="invocations")
    return float(cursor.get("t", 0)), str(cursor.get("id", ""))


def _stored(row: Any) -> StoredInvocation:
    return StoredInvocation(_to_resource(row), int(row.session_pk), row.request_hash)


def _to_resource(row: Any) -> Invocation:
    """The API view of a row (its columns carry the resource's field names)."""
    return Invocation.model_validate(row, from_attributes=True)


__all__ = ["InvocationStore", "StoredInvocation"]
