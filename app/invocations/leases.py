"""The run side of the invocation store: a run's lease on its invocation and session, from
taking it to giving it up.

`try_acquire` takes a queued run's session lease (first come, first served), `heartbeat` renews
it, `claim` takes over invocations whose owner stopped renewing them (or that were queued for
any worker), `hand_back` gives one back at shutdown, `finish` records the outcome, and
`fail_waiting` ends one that waited for the client too long. Every write a run makes here holds
its fence (docs/ARCHITECTURE.md, "Fencing").
"""

import time
from dataclasses import dataclass
from typing import Any

from app.db.repositories.invocations import InvocationRepository
from app.db.uow import Db
from app.errors import InvocationInterrupted, LeaseLost
from app.invocations.models import Invocation, InvocationStatus
from app.invocations.stored import (
    WAITED_FOR_KEY,
    WAITING_CANCELLED,
    StoredInvocation,
    StoreUnits,
    acquire_lease,
    answer_open_calls,
    cancel_waiting,
    to_resource,
    waited_for_action,
)
from app.observability.metrics import fenced_write
from app.sessions.fence import Fence, lease_lost


@dataclass(frozen=True)
class Claimed:
    """An invocation this process took over (`InvocationStore.claim`)."""

    stored: StoredInvocation
    #: The stored request: what the run was asked to do (its latest resume's, if resumed).
    request: dict[str, Any]
    #: It had started before (a takeover, resumed from its history); False: it was only queued.
    started: bool


class LeaseStore(StoreUnits):
    """Leases, takeovers and outcomes: what the run task and the queue worker write."""

    async def try_acquire(
        self, invocation_id: str, session_pk: int, owner: str, ttl: float
    ) -> int | None:
        """Take the session's lease for `invocation_id` (first come, first served) and mark it
        running; the attempt it runs as (its fencing token), None if the session is not free."""
        return await self._uow.write(
            "try_acquire", lambda db: acquire_lease(db, invocation_id, session_pk, owner, ttl)
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
                        answer_open_calls(db, invocation_id, session_pk, error, now)
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
                    to_resource(taken),
                    session_pk,
                    taken.request_hash,
                    acquired=True,
                    waited_for=waited_for_action(request.pop(WAITED_FOR_KEY, None)),
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
        invocation is gone with its session). A run that ends waiting for the client after a
        cancel was requested ends `cancelled` instead, its open calls answered.

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
                answer_open_calls(db, invocation_id, session_pk, error, now)
            repository.release_lease(session_pk, invocation_id)
            if row.cancel_requested and row.status == InvocationStatus.REQUIRES_ACTION.value:
                # A cancel that came as the run ended (too late to stop it: a run elsewhere
                # reads it at its next heartbeat) still cancels it, as it would a waiting one.
                cancel_waiting(db, invocation_id, WAITING_CANCELLED, now)
                return repository.by_id(invocation_id)
            return row

        try:
            row = await self._uow.write("finish", unit)
        except LeaseLost:
            fenced_write("status")
            raise
        return to_resource(row) if row is not None else None

    async def expired_waiting(self, timeout: float) -> list[Invocation]:
        """Invocations that have waited for the client longer than `timeout` seconds."""
        cutoff = time.time() - timeout
        rows = await self._uow.read(
            lambda db: InvocationRepository(db).expired_waiting(cutoff=cutoff)
        )
        return [to_resource(row) for row in rows]

    async def fail_waiting(self, invocation_id: str, error: dict[str, Any]) -> bool:
        """Fail an invocation that still waits for the client, answering its open calls with
        `error` in the same transaction; whether it did (another replica may have first)."""
        now = time.time()

        def unit(db: Db) -> bool:
            session_pk = InvocationRepository(db).fail_waiting(invocation_id, error=error, now=now)
            if session_pk is None:
                return False
            answer_open_calls(db, invocation_id, session_pk, error, now)
            return True

        return bool(await self._uow.write("fail_waiting", unit))


__all__ = ["Claimed", "LeaseStore"]
