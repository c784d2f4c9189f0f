"""InvocationManager: the routers' one way to invocations, over the parts of a run's life.

A run's life belongs to the server, not to the HTTP request that started it. The manager is the
facade routers call (start, resume, answer, get, list, attach, follow, wait, cancel); behind it:

- admission (`start`, `resume`, `answer`, here): decisions over the store. `reject` takes the
  session's lease before answering (409 `session-busy` if taken); `enqueue` queues the run, first
  come first served across replicas, up to AGENTD_ENQUEUE_TIMEOUT_SECONDS; an Idempotency-Key
  replays the first invocation; an ADK-style answer continues the invocation that owns its call.
  With AGENTD_RUN_INVOCATIONS=false nothing runs here: invocations are queued for the processes
  that run them (`agentd worker`).
- the run task (`app.invocations.run_task`): one run in this process, its lease, heartbeat,
  timeout and end (one `RunEnd` value: recorded, or let go to another attempt).
- the queue worker (`app.invocations.queue_worker`): claiming queued and abandoned invocations
  (takeovers, attempt + 1, resumed from their last committed event), and expiring those that
  waited for the client too long.
- following (`app.invocations.following`): live events of runs here, persisted ones of runs
  elsewhere, and waiting for the end.

On SIGTERM (`shutdown`) a process stops claiming, gives its runs AGENTD_SHUTDOWN_GRACE_SECONDS to
end, then hands the rest back for others to take over. A failed or cancelled invocation can be
resumed under its own id, from its session's history, keeping its create time and so its place
in the session's line.
"""

import builtins
import contextlib
import hashlib
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator

import orjson

from app.artifacts.base import BaseArtifactService
from app.errors import (
    IdempotencyKeyReused,
    InvocationNotResumable,
    OutcomeUnknown,
    Overloaded,
    SessionBusy,
)
from app.invocations.answers import (
    answer_ids,
    answer_message,
    check_answers,
    owner_to_continue,
)
from app.invocations.channel import StreamItem
from app.invocations.following import Following
from app.invocations.models import (
    AnswerInvocationRequest,
    CreateInvocationRequest,
    Invocation,
    InvocationStatus,
    ResumeInvocationRequest,
    SessionRef,
)
from app.invocations.notices import CANCEL_CHANNEL
from app.invocations.outcomes import OutcomeRecorder
from app.invocations.publishing import EventPublisher, Followers
from app.invocations.queue_worker import QueueWorker
from app.invocations.registry import AppRegistry
from app.invocations.run_state import USER_EVENT_ID_KEY, RunHandle
from app.invocations.run_task import RunTasks
from app.invocations.runner import Runner
from app.invocations.store import InvocationStore, StoredInvocation
from app.invocations.wakeup import SessionWaiters
from app.memory.base import BaseMemoryService
from app.observability.metrics import invocation_refused
from app.plugins.span_recorder import SpanRecorder
from app.sessions.base import BaseSessionService
from app.sessions.models import Event, new_event_id, new_invocation_id
from app.settings import Settings


class InvocationManager:
    """Starts, tracks and stops the invocations of this replica."""

    def __init__(
        self,
        *,
        store: InvocationStore,
        registry: AppRegistry,
        session_service: BaseSessionService,
        artifact_service: BaseArtifactService | None,
        memory_service: BaseMemoryService | None,
        settings: Settings,
    ) -> None:
        self._store = store
        self._registry = registry
        self._session_service = session_service
        self._artifact_service = artifact_service
        self._memory_service = memory_service
        self._settings = settings
        self.replica_id = settings.replica_id or (
            f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        )
        self._runners: dict[str, Runner] = {}
        #: Followers here of runs elsewhere; the publisher of the runs here.
        self._followers = Followers()
        self._publisher = EventPublisher(store.notices)
        self._waiters = SessionWaiters()
        self._outcomes = OutcomeRecorder(store, self._waiters.wake)
        self._tasks = RunTasks(
            store=store,
            settings=settings,
            replica_id=self.replica_id,
            outcomes=self._outcomes,
            waiters=self._waiters,
            publisher=self._publisher,
            on_claimed_run_end=lambda: self._worker.wake(),
        )
        self._worker = QueueWorker(
            store=store,
            settings=settings,
            replica_id=self.replica_id,
            tasks=self._tasks,
            outcomes=self._outcomes,
            runner_for=self._runner,
            answer=self.answer,
        )
        self._following = Following(store, self._followers, self._tasks)

    # -- lifecycle ------------------------------------------------------------------------

    async def startup(self) -> None:
        """Listen for other processes' ends of runs and queued work (PostgreSQL); if this
        process runs invocations, take over those left by dead processes, then keep claiming
        (woken by notifications, else periodically)."""
        await self._store.notices.listen(
            self._on_session_free,
            on_connect=self._on_listen_connect,
            on_events=self._followers.wake,
            on_follow=self._tasks.followed_elsewhere,
            on_cancel=self._on_cancel_notice,
        )
        self._publisher.start()
        if self._settings.run_invocations:
            await self._worker.start()

    async def shutdown(self) -> None:
        """Stop claiming; let local runs go on for AGENTD_SHUTDOWN_GRACE_SECONDS, then hand the
        rest back to the queue, where another process takes them over (a rolling deploy loses
        nothing)."""
        await self._worker.stop()
        await self._tasks.shutdown(self._settings.shutdown_grace_seconds)
        await self._registry.close()  # toolsets: MCP sessions and their subprocesses
        await self._outcomes.close()
        await self._publisher.stop()
        await self._store.notices.stop()

    async def expire_waiting(self) -> int:
        """Settle the invocations that waited for the client too long (see `QueueWorker`)."""
        return await self._worker.expire_waiting()

    def _on_session_free(self, session_pk: int, owner: str) -> None:
        # This replica's own ends woke its waiters already, in the run task.
        if owner != self.replica_id:
            self._waiters.wake(session_pk, "notification")
            self._worker.wake()

    def _on_cancel_notice(self, invocation_id: str) -> None:
        # Another process stored the request; the run's own end records the cancellation.
        self._tasks.stop(invocation_id)

    def _on_listen_connect(self) -> None:
        self._waiters.wake_all()
        self._worker.wake()
        self._followers.wake_all()  # what was published meanwhile is lost

    # -- admission ------------------------------------------------------------------------

    async def start(
        self,
        ref: SessionRef,
        request: CreateInvocationRequest,
        *,
        idempotency_key: str | None = None,
        invocation_id: str | None = None,
    ) -> RunHandle:
        """Create the invocation and start running it (or return the one the key names)."""
        runner = self._runner(ref.app_name)
        answers = answer_ids(request.new_message)
        if answers and idempotency_key is None:
            handle = await self._answer_owner(ref, request, answers)
            if handle is not None:
                return handle
        body = request.model_dump(mode="json", by_alias=True, exclude_none=True)
        request_hash = hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()
        session_pk: int | None = None  # looked up inside the create transaction
        if idempotency_key is not None:
            session_pk = await self._store.session_pk(ref)
            existing = await self._store.find_by_key(ref, idempotency_key)
            if existing is not None:
                return self._replay(ref, existing, request_hash)
        user_event_id = new_event_id()
        for_workers = not self._settings.run_invocations
        if not for_workers:
            self._admit()
        invocation_id = invocation_id or new_invocation_id()
        with _outcome_named(invocation_id):
            stored = await self._store.create(
                ref,
                invocation_id=invocation_id,
                mode=request.mode,
                request={**body, USER_EVENT_ID_KEY: user_event_id},
                request_hash=request_hash,
                idempotency_key=idempotency_key,
                owner=self.replica_id,
                ttl=self._settings.lease_seconds,
                acquire=not for_workers,
                session_pk=session_pk,
                on_waiting="reject" if request.multitask_strategy == "reject" else "cancel",
                for_workers=for_workers,
            )
        if not stored.created:  # lost an Idempotency-Key race to an identical request
            return self._replay(ref, stored, request_hash)
        if for_workers:  # a worker runs it; followers read it from the database
            return RunHandle(
                ref=ref, invocation=stored.invocation, session_pk=stored.session_pk, created=True
            )
        if not stored.acquired and request.multitask_strategy == "reject":
            await self._store.delete(stored.invocation.id)
            # While it existed, runs queued after it could not start ahead of it.
            self._waiters.wake(stored.session_pk)
            raise SessionBusy("Another invocation is running on this session.")
        return self._tasks.launch(
            ref, runner, request, stored, created=True, user_event_id=user_event_id
        )

    def _admit(self) -> None:
        """Overloaded (503, Retry-After) when this process already holds as many runs as it
        may: refused before anything is stored, and cheaply, so an overloaded server still
        answers at once and the runs it admitted keep their pace."""
        limit = self._settings.resolved_max_inflight_invocations
        if len(self._tasks) >= limit:
            invocation_refused()
            raise Overloaded(limit)

    async def _answer_owner(
        self, ref: SessionRef, request: CreateInvocationRequest, answers: frozenset[str]
    ) -> RunHandle | None:
        """ADK's way of answering (function responses in a new message, no `invocationId`):
        continue the invocation the answers belong to (`answers.owner_to_continue`) under its
        id, or None when the message starts an invocation of its own."""
        owner = await owner_to_continue(self._store, ref, answers)
        if owner is None:
            return None
        fields = request.model_dump(exclude={"new_message"})
        resumed = ResumeInvocationRequest(new_message=request.new_message, **fields)
        if owner.status is InvocationStatus.REQUIRES_ACTION:
            return await self.resume(ref, owner.id, resumed, waiting=owner)
        with contextlib.suppress(InvocationNotResumable):
            # Completed and not waiting for what the message answers (an ordinary tool's call),
            # or another answer continues it now: an invocation of its own.
            return await self.resume(ref, owner.id, resumed, waiting=owner)
        return None

    async def resume(
        self,
        ref: SessionRef,
        invocation_id: str,
        request: ResumeInvocationRequest,
        *,
        waiting: Invocation | None = None,
    ) -> RunHandle:
        """Run a failed or cancelled invocation again under its id, from the session's history;
        or continue a completed one that waits for the client (a long-running call, such as a
        tool's credential request) when `request.new_message` answers one of those calls.

        Answers in `request.new_message` to an invocation in `requires_action` are checked by
        `answers.check_answers` first, whichever door they came through (`/resume`, ADK's
        `/run` with or without `invocationId`): nothing is written when they fail. `waiting`:
        the invocation as the caller already read it (saves reading it again).

        InvocationNotFound if the session has no such invocation, InvocationNotResumable
        otherwise; `reject` / `enqueue` apply as for a new invocation.
        """
        runner = self._runner(ref.app_name)
        answers = answer_ids(request.new_message)
        if answers:
            if waiting is None:
                waiting = (await self._store.get(ref, invocation_id)).invocation
            if waiting.status is InvocationStatus.REQUIRES_ACTION:
                check_answers(waiting, request, self._settings.max_event_bytes)
        user_event_id = new_event_id()
        for_workers = not self._settings.run_invocations
        if not for_workers:
            self._admit()
        body = request.model_dump(mode="json", by_alias=True, exclude_none=True)
        stored = await self._store.resume(
            ref,
            invocation_id,
            mode=request.mode,
            owner=self.replica_id,
            ttl=self._settings.lease_seconds,
            wait=request.multitask_strategy == "enqueue",
            answers=answers,
            request={**body, USER_EVENT_ID_KEY: user_event_id},
            for_workers=for_workers,
        )
        if for_workers:
            return RunHandle(
                ref=ref,
                invocation=stored.invocation,
                session_pk=stored.session_pk,
                created=False,
                after_seq=stored.resumed_after,
            )
        return self._tasks.launch(
            ref, runner, request, stored, created=False, user_event_id=user_event_id
        )

    async def answer(
        self, ref: SessionRef, invocation_id: str, request: AnswerInvocationRequest
    ) -> RunHandle:
        """Answer some or all of what a `requires_action` invocation waits for, and go on.

        The answers are turned into one user event of the invocation by
        `answers.answer_message` and checked in `resume`, as ADK-style answers are (nothing is
        written when they fail); the run then continues from there under the same id, and
        answers still missing keep it waiting.
        """
        runner = self._runner(ref.app_name)
        invocation = (await self._store.get(ref, invocation_id)).invocation

        async def session_events() -> list[Event]:
            session = await runner.session_service.get_session(
                app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id
            )
            return session.events if session is not None else []

        message = await answer_message(invocation, request, session_events)
        resumed = ResumeInvocationRequest(new_message=message, mode=request.mode)
        return await self.resume(ref, invocation_id, resumed, waiting=invocation)

    def _replay(self, ref: SessionRef, existing: StoredInvocation, request_hash: str) -> RunHandle:
        if existing.request_hash != request_hash:
            raise IdempotencyKeyReused(
                "This Idempotency-Key was used with a different request body."
            )
        return RunHandle(
            ref=ref, invocation=existing.invocation, session_pk=existing.session_pk, created=False
        )

    def _runner(self, app_name: str) -> Runner:
        runner = self._runners.get(app_name)
        if runner is None:
            runner = Runner(
                app=self._registry.load(app_name),
                app_name=app_name,
                session_service=self._session_service,
                artifact_service=self._artifact_service,
                memory_service=self._memory_service,
                exclusive_sessions=True,  # the run holds the session's lease
                # spans for the dev UI's Trace pane and the console (app.api.dev_trace)
                plugins=[SpanRecorder()] if self._settings.trace_spans else [],
            )
            self._runners[app_name] = runner
        return runner

    # -- read, follow, wait, cancel -------------------------------------------------------

    async def get(self, ref: SessionRef, invocation_id: str) -> Invocation:
        """The invocation, or InvocationNotFound (also for another session's)."""
        return (await self._store.get(ref, invocation_id)).invocation

    # `builtins.list` from here on: inside the class, `list` names this method.
    async def list(
        self, ref: SessionRef, *, page_size: int, page_token: str | None
    ) -> tuple[builtins.list[Invocation], str | None]:
        """A page of the session's invocations, newest first (SessionNotFound if it is gone)."""
        return await self._store.list_page(ref, page_size=page_size, page_token=page_token)

    async def attach(self, ref: SessionRef, invocation_id: str) -> RunHandle:
        """A handle to follow an existing invocation (InvocationNotFound if there is none)."""
        stored = await self._store.get(ref, invocation_id)
        return RunHandle(
            ref=ref, invocation=stored.invocation, session_pk=stored.session_pk, created=False
        )

    def follow(
        self, handle: RunHandle, *, after_seq: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """Events after `after_seq` (then live ones) until the invocation ends, then `done`.

        By default, the events of the run the handle started (of a resumed invocation: this run's).
        """
        return self._following.follow(handle, after_seq=after_seq)

    async def wait(self, handle: RunHandle) -> Invocation:
        """The invocation once it has ended (the run goes on if the waiter goes away)."""
        return await self._following.wait(handle)

    async def cancel(self, ref: SessionRef, invocation_id: str) -> Invocation:
        """Ask the invocation to stop; a local run stops at once, a remote one within seconds,
        and one waiting for the client (`requires_action`) ends `cancelled` at once, its open
        calls answered with the cancellation. An ended one is returned as it is."""
        invocation = await self._store.request_cancel(ref, invocation_id)
        if await self._tasks.cancel(invocation_id):
            invocation = (await self._store.get(ref, invocation_id)).invocation
        elif invocation.status in (InvocationStatus.QUEUED, InvocationStatus.RUNNING):
            # Run by another process: it stops now when it hears this, else at its next
            # heartbeat (which reads the request).
            await self._store.notices.notify(CANCEL_CHANNEL, [invocation_id])
        return invocation

    async def persisted_events(self, handle: RunHandle) -> builtins.list[Event]:
        """The persisted events of the run the handle started, from memory when it ran here."""
        return await self._following.persisted_events(handle)


@contextlib.contextmanager
def _outcome_named(invocation_id: str) -> Iterator[None]:
    """An unconfirmed commit of an invocation's creation names the invocation, so its client
    can look it up (`GET .../invocations/{id}`) instead of sending the message again."""
    try:
        yield
    except OutcomeUnknown as exc:
        raise OutcomeUnknown(exc.detail, invocationId=invocation_id) from exc


__all__ = ["InvocationManager", "RunHandle"]
