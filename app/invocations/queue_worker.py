"""The queue worker: what a process that runs invocations takes from the queue by itself.

It claims (`InvocationStore.claim`: one winner, decided in the database) invocations queued for
any worker and those whose owner stopped renewing their lease (a dead or stalled process), within
AGENTD_WORKER_CONCURRENCY, and launches them as runs of this process: a takeover continues from
the last committed event (Runner `recover`), attempt + 1; after AGENTD_MAX_ATTEMPTS the claim
fails it with `invocation-interrupted` instead. It also settles invocations that waited for the
client past AGENTD_ACTION_TIMEOUT_SECONDS. Notifications wake it on PostgreSQL (`wake`); a
periodic claim covers what nobody notified (SQLite's only trigger).
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from app.errors import ActionExpired, AgentdError
from app.invocations.answers import expiry_answers
from app.invocations.leases import Claimed
from app.invocations.models import (
    AnswerInvocationRequest,
    InvocationStatus,
    ResumeInvocationRequest,
    SessionRef,
)
from app.invocations.outcomes import OutcomeRecorder
from app.invocations.run_state import USER_EVENT_ID_KEY, RunHandle
from app.invocations.run_task import RunTasks
from app.invocations.runner import Runner
from app.invocations.store import InvocationStore
from app.observability.metrics import queue_claimed, queue_depth
from app.sessions.fence import Fence
from app.settings import Settings

logger = logging.getLogger("agentd.invocations")

#: How often a process that runs invocations looks for work nobody notified: a dead process's
#: expired run, or anything queued while it was not listening (SQLite: every new one).
CLAIM_POLL_SECONDS = 1.0

#: How the worker answers an expired invocation under policy `continue` (the manager's `answer`).
Answer = Callable[[SessionRef, str, AnswerInvocationRequest], Awaitable[RunHandle]]


class QueueWorker:
    """Claims queued and abandoned invocations for this process, and expires waiting ones."""

    def __init__(
        self,
        *,
        store: InvocationStore,
        settings: Settings,
        replica_id: str,
        tasks: RunTasks,
        outcomes: OutcomeRecorder,
        runner_for: Callable[[str], Runner],
        answer: Answer,
    ) -> None:
        self._store = store
        self._settings = settings
        self._replica_id = replica_id
        self._tasks = tasks
        self._outcomes = outcomes
        self._runner_for = runner_for
        self._answer = answer
        #: Set when there may be work to claim (a notification, a run of a claimed one ended).
        self._wanted = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._stopping = False
        self._background: set[asyncio.Task[Any]] = set()

    def wake(self) -> None:
        """There may be work to claim: look at once."""
        self._wanted.set()

    async def start(self) -> None:
        """Take over what dead processes left, then keep claiming."""
        await self.claim()
        self._loop = asyncio.create_task(self._claim_forever(), name="agentd-claimer")

    async def stop(self) -> None:
        """Stop claiming (the runs already launched go on)."""
        self._stopping = True
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop

    async def claim(self) -> None:
        """Take what the queue holds for this process (within its concurrency) and run it."""
        free = self._settings.worker_concurrency - self._tasks.claimed()
        claimed, waiting = await self._store.claim(
            owner=self._replica_id,
            ttl=self._settings.lease_seconds,
            max_attempts=self._settings.max_attempts,
            limit=max(free, 0),
        )
        queue_depth(waiting)
        for item in claimed:
            self._launch(item)
        if claimed and len(claimed) == free:  # maybe more: look again at once
            self._wanted.set()

    async def expire_waiting(self) -> int:
        """Settle invocations that waited longer than `AGENTD_ACTION_TIMEOUT_SECONDS`: fail them
        (`action-expired`, their open calls answered with it), or, with policy `continue`,
        answer every pending call with an error (confirmations as denials) and go on. How many
        this replica settled (another may settle some first; each is settled once)."""
        timeout = self._settings.action_timeout_seconds
        if timeout is None:
            return 0
        settled = 0
        for invocation in await self._store.expired_waiting(timeout):
            ref = SessionRef(invocation.app_name, invocation.user_id, invocation.session_id)
            detail = f"Invocation {invocation.id!r} waited more than {timeout} s for an answer."
            answers = (
                expiry_answers(invocation, detail)
                if self._settings.action_timeout_policy == "continue"
                else None
            )
            if answers is not None:
                try:
                    await self._answer(ref, invocation.id, answers)
                except AgentdError:  # answered or settled elsewhere meanwhile
                    continue
                settled += 1
            elif await self._store.fail_waiting(invocation.id, ActionExpired(detail).marshal()):
                settled += 1
        return settled

    async def _claim_forever(self) -> None:
        # Notifications do the real work on PostgreSQL; the period bounds how long a dead
        # process's run waits past its lease, and is SQLite's only trigger.
        interval = min(max(self._settings.lease_seconds / 2, 0.2), CLAIM_POLL_SECONDS)
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wanted.wait(), timeout=interval)
            self._wanted.clear()
            try:
                await self.claim()
                expired = await self.expire_waiting()
                if expired:
                    logger.warning("%d invocation(s) waited too long for an answer", expired)
            except Exception:
                logger.exception("claiming invocations failed")

    def _launch(self, item: Claimed) -> None:
        invocation = item.stored.invocation
        ref = SessionRef(invocation.app_name, invocation.user_id, invocation.session_id)
        body = dict(item.request)
        user_event_id = body.pop(USER_EVENT_ID_KEY, None)
        request = ResumeInvocationRequest.model_validate(body)
        queue_claimed(
            "takeover" if item.started else "queued",
            invocation.attempt,
            None if item.started else time.time() - invocation.create_time,
        )
        if item.started:
            logger.warning(
                "taking over invocation %s (attempt %d)", invocation.id, invocation.attempt
            )
        try:
            runner = self._runner_for(ref.app_name)
        except AgentdError as error:  # the app no longer loads here: fail it for good
            logger.error("cannot run invocation %s: %s", invocation.id, error.detail)
            record = self._outcomes.record(
                ref,
                Fence(invocation.id, self._replica_id, invocation.attempt),
                item.stored.session_pk,
                mode=request.mode,
                create_time=invocation.create_time,
                status=InvocationStatus.FAILED,
                error=error.marshal(),
            )
            task = asyncio.create_task(record, name=f"fail {invocation.id}")
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return
        self._tasks.launch(
            ref,
            runner,
            request,
            item.stored,
            created=False,
            user_event_id=user_event_id if isinstance(user_event_id, str) else None,
            recover=item.started,
            claimed=True,
        )


__all__ = ["CLAIM_POLL_SECONDS", "QueueWorker"]
