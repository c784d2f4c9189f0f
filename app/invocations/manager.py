"""InvocationManager: starts runs as server-owned tasks and lets clients wait, follow or cancel.

A run's life belongs to the server, not to the HTTP request that started it: the run is an
asyncio task of this process that keeps going when its client disconnects (unless the client
asked `onDisconnect: cancel`). While it runs the task renews its session lease and polls for a
cancel request (which may come through another replica), so:
- `reject` takes the lease before answering (409 `session-busy` if taken); `enqueue` waits, first
  come first served across replicas, up to AGENTD_ENQUEUE_TIMEOUT_SECONDS. A waiting run is not
  polling on a timer: it stands in line (`app.invocations.wakeup`) and tries again the moment a
  run of its session ends here, or on another replica (PostgreSQL's NOTIFY, through the store);
  a poll every ENQUEUE_POLL_SECONDS remains for what no one announces (a lost notification,
  another process on the same SQLite file, a lease the reaper freed);
- cancelling interrupts the run at its next await; an event being committed at that moment
  finishes committing first (see Runner), so nothing is ever half-written;
- a replica that dies stops renewing; once an invocation's lease has expired any process that
  runs invocations takes it over (`claim`: one winner, decided in the database), attempt + 1,
  and continues it from its last committed event (Runner `recover`): completed model and tool
  steps are not redone; after AGENTD_MAX_ATTEMPTS it is marked `failed` with
  `invocation-interrupted` instead. On SIGTERM (`shutdown`) a process stops claiming, gives its
  runs AGENTD_SHUTDOWN_GRACE_SECONDS to end, then hands the rest back for others to take over;
- with AGENTD_RUN_INVOCATIONS=false a replica runs nothing: it queues invocations for the
  processes that do (`agentd worker`), which claim them as above (woken by NOTIFY on
  PostgreSQL, else by their periodic claim).
Followers of a run on this replica get live events from its RunChannel; followers of a run on
another replica get persisted events by polling the database. Routers reach invocations only
through the manager (start, resume, get, list, attach, follow, wait, cancel), never through its
store.

A failed or cancelled invocation can be resumed (`resume`): it runs again under its own id, from
its session's history, with the same lease rules as a new one. It keeps its create time, and so
its place in the session's line: its user message came before those of runs queued after it.
"""

import asyncio
import builtins
import contextlib
import hashlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from app.artifacts.base import BaseArtifactService
from app.contexts.invocation import RunConfig, StreamingMode
from app.errors import (
    ActionExpired,
    AgentdError,
    IdempotencyKeyReused,
    InternalError,
    InvocationCancelled,
    InvocationInterrupted,
    InvocationTimeout,
    LeaseLost,
    OutcomeUnknown,
    SessionBusy,
)
from app.invocations.announcements import Announcer, Followers
from app.invocations.answers import (
    answer_ids,
    answer_message,
    check_answers,
    expiry_answers,
    required_action,
)
from app.invocations.channel import RunChannel, StreamItem
from app.invocations.models import (
    AnswerInvocationRequest,
    CreateInvocationRequest,
    Invocation,
    InvocationStatus,
    ResumeInvocationRequest,
    SessionRef,
)
from app.invocations.outcomes import OutcomeRecorder
from app.invocations.registry import AppRegistry
from app.invocations.runner import Runner
from app.invocations.store import (
    FOLLOW_CHANNEL,
    Claimed,
    InvocationStore,
    StoredInvocation,
)
from app.invocations.wakeup import SessionWaiters
from app.memory.base import BaseMemoryService
from app.observability.logging import bind_invocation
from app.observability.metrics import (
    enqueue_woken,
    follow_woken,
    invocation_finished,
    invocation_started,
    lease_acquired,
    lease_released,
    queue_claimed,
    queue_depth,
)
from app.sessions.base import BaseSessionService
from app.sessions.fence import Fence
from app.sessions.models import Event, new_event_id, new_invocation_id
from app.settings import Settings

logger = logging.getLogger("agentd.invocations")

#: How often a follower of a run on another replica reads new events without notifications
#: (SQLite), and how long it waits for one before reading anyway (PostgreSQL).
REMOTE_POLL_SECONDS = 0.25
REMOTE_FALLBACK_SECONDS = 2.0
#: How often a queued run tries its session when nothing woke it. Wake-ups do the real work, so
#: this only bounds the delay when one is missing (see the module docstring): 250 ms halves the
#: old backoff's 500 ms worst case, and costs a waiting run 4 small write transactions a second.
ENQUEUE_POLL_SECONDS = 0.25
#: How often a process that runs invocations looks for work nobody announced: a dead process's
#: expired run, or anything queued while it was not listening (SQLite: every new one).
CLAIM_POLL_SECONDS = 1.0
#: Where a stored request keeps the id its user event is stored under.
USER_EVENT_ID_KEY = "userEventId"


@dataclass
class LocalRun:
    """A run executing in this process."""

    invocation_id: str
    session_pk: int
    channel: RunChannel
    #: The invocation's create time: with the id, its place in the session's queue.
    create_time: float = 0.0
    #: A resumed invocation's earlier events are those up to this seq (see `StoredInvocation`).
    resumed_after: int = 0
    task: "asyncio.Task[None] | None" = None
    cancel_requested: bool = False
    #: The id its user event is stored under (an attempt that finds it stored does not store it
    #: again).
    user_event_id: str | None = None
    #: Taken over from a process that died: continue from the last committed event.
    recover: bool = False
    #: Taken from the queue (its end may let this process take the next one of its session).
    claimed: bool = False
    #: Stopped to be handed back to the queue (shutdown), or because another process took it
    #: over (its lease had expired): its outcome is not this process's to record.
    handed_back: bool = False
    lost: bool = False
    #: Announce its committed events on PostgreSQL (it was claimed: its clients are elsewhere;
    #: or another process said it follows it).
    announce: bool = False
    #: This process's replica id and the invocation's attempt it runs as: the run's fencing
    #: token (the attempt is the row's while queued, set anew when the lease is taken).
    owner: str = ""
    attempt: int = 0

    @property
    def fence(self) -> Fence:
        """The lease every write of this run must still hold (`app.sessions.fence`)."""
        return Fence(self.invocation_id, self.owner, self.attempt)


@dataclass(frozen=True)
class RunHandle:
    """A run to wait for or follow: the invocation, and whether the call that made it created it."""

    ref: SessionRef
    invocation: Invocation
    session_pk: int
    created: bool
    channel: RunChannel | None = None
    #: The events of the run this handle started come after this seq (a resumed invocation's
    #: earlier attempts are not its run's); 0 for every other handle.
    after_seq: int = 0


RunRequest = CreateInvocationRequest | ResumeInvocationRequest


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
        self._runs: dict[str, LocalRun] = {}
        self._runners: dict[str, Runner] = {}
        self._reaper: asyncio.Task[None] | None = None
        #: Set when there may be work to claim (a notification, a run of a claimed one ended).
        self._claim_wanted = asyncio.Event()
        self._stopping = False
        self._background: set[asyncio.Task[Any]] = set()
        #: Followers here of runs elsewhere; the announcements of the runs here.
        self._followers = Followers()
        self._announcer = Announcer(store)
        self._waiters = SessionWaiters()
        self._outcomes = OutcomeRecorder(store, self._waiters.wake)

    # -- lifecycle ------------------------------------------------------------------------

    async def startup(self) -> None:
        """Listen for other processes' ends of runs and queued work (PostgreSQL); if this
        process runs invocations, take over those left by dead processes, then keep claiming
        (woken by notifications, else periodically)."""
        await self._store.listen_for_free_sessions(
            self._on_session_free,
            on_connect=self._on_listen_connect,
            on_events=self._followers.wake,
            on_follow=self._on_follow,
        )
        self._announcer.start()
        if self._settings.run_invocations:
            await self._claim()
            self._reaper = asyncio.create_task(self._claim_forever(), name="agentd-claimer")

    async def shutdown(self) -> None:
        """Stop claiming; let local runs go on for AGENTD_SHUTDOWN_GRACE_SECONDS, then hand the
        rest back to the queue, where another process takes them over (a rolling deploy loses
        nothing)."""
        self._stopping = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        if tasks and self._settings.shutdown_grace_seconds > 0:
            await asyncio.wait(tasks, timeout=self._settings.shutdown_grace_seconds)
        for run in list(self._runs.values()):
            if run.task is not None and not run.task.done():
                run.handed_back = True
                run.task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._registry.close()  # toolsets: MCP sessions and their subprocesses
        await self._outcomes.close()
        await self._announcer.stop()
        await self._store.stop_listening()

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
                    await self.answer(ref, invocation.id, answers)
                except AgentdError:  # answered or settled elsewhere meanwhile
                    continue
                settled += 1
            elif await self._store.fail_waiting(invocation.id, ActionExpired(detail).marshal()):
                settled += 1
        return settled

    def _on_session_free(self, session_pk: int, owner: str) -> None:
        # This replica's own ends woke its waiters already, in `_execute`.
        if owner != self.replica_id:
            self._waiters.wake(session_pk, "notification")
            self._claim_wanted.set()

    def _on_listen_connect(self) -> None:
        self._waiters.wake_all()
        self._claim_wanted.set()
        self._followers.wake_all()  # what was announced meanwhile is lost

    def _on_follow(self, invocation_id: str) -> None:
        run = self._runs.get(invocation_id)
        if run is not None and not run.announce:
            run.announce = True
            self._announcer.announce(invocation_id)  # what it committed before the ask

    async def _claim_forever(self) -> None:
        # Notifications do the real work on PostgreSQL; the period bounds how long a dead
        # process's run waits past its lease, and is SQLite's only trigger.
        interval = min(max(self._settings.lease_seconds / 2, 0.2), CLAIM_POLL_SECONDS)
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._claim_wanted.wait(), timeout=interval)
            self._claim_wanted.clear()
            try:
                await self._claim()
                expired = await self.expire_waiting()
                if expired:
                    logger.warning("%d invocation(s) waited too long for an answer", expired)
            except Exception:
                logger.exception("claiming invocations failed")

    async def _claim(self) -> None:
        """Take what the queue holds for this process (within its concurrency) and run it."""
        free = self._settings.worker_concurrency - sum(r.claimed for r in self._runs.values())
        claimed, waiting = await self._store.claim(
            owner=self.replica_id,
            ttl=self._settings.lease_seconds,
            max_attempts=self._settings.max_attempts,
            limit=max(free, 0),
        )
        queue_depth(waiting)
        for item in claimed:
            self._launch_claimed(item)
        if claimed and len(claimed) == free:  # maybe more: look again at once
            self._claim_wanted.set()

    def _launch_claimed(self, item: Claimed) -> None:
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
            runner = self._runner(ref.app_name)
        except AgentdError as error:  # the app no longer loads here: fail it for good
            logger.error("cannot run invocation %s: %s", invocation.id, error.detail)
            record = self._outcomes.record(
                ref,
                Fence(invocation.id, self.replica_id, invocation.attempt),
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
        self._launch(
            ref,
            runner,
            request,
            item.stored,
            created=False,
            user_event_id=user_event_id if isinstance(user_event_id, str) else None,
            recover=item.started,
            claimed=True,
        )

    # -- start ----------------------------------------------------------------------------

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
            # ADK's way of answering: a new message with the function responses, without
            # `invocationId`. It continues the invocation that waits for those calls.
            for waiting in await self._store.waiting(ref):
                action = waiting.required_action
                if action is not None and answers & {c.request_call_id for c in action.calls}:
                    fields = request.model_dump(exclude={"new_message"})
                    resumed = ResumeInvocationRequest(new_message=request.new_message, **fields)
                    return await self.resume(ref, waiting.id, resumed, waiting=waiting)
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
        return self._launch(ref, runner, request, stored, created=True, user_event_id=user_event_id)

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
        return self._launch(
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

    def _launch(
        self,
        ref: SessionRef,
        runner: Runner,
        request: RunRequest,
        stored: StoredInvocation,
        *,
        created: bool,
        user_event_id: str | None = None,
        recover: bool = False,
        claimed: bool = False,
    ) -> RunHandle:
        """Start the task that runs (or first waits for its session, then runs) the invocation."""
        invocation = stored.invocation
        run = LocalRun(
            invocation_id=invocation.id,
            session_pk=stored.session_pk,
            channel=RunChannel(),
            create_time=invocation.create_time,
            resumed_after=stored.resumed_after,
            user_event_id=user_event_id,
            recover=recover,
            claimed=claimed,
            announce=claimed,
            owner=self.replica_id,
            attempt=invocation.attempt,
        )
        self._runs[invocation.id] = run
        with bind_invocation(invocation.id):  # the task copies the context: its logs carry the id
            run.task = asyncio.create_task(
                self._execute(run, ref, runner, request, stored.acquired),
                name=f"invocation {invocation.id}",
            )
        return RunHandle(
            ref=ref,
            invocation=invocation,
            session_pk=stored.session_pk,
            created=created,
            channel=run.channel,
            after_seq=stored.resumed_after,
        )

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
            )
            self._runners[app_name] = runner
        return runner

    # -- the run task ---------------------------------------------------------------------

    async def _execute(
        self,
        run: LocalRun,
        ref: SessionRef,
        runner: Runner,
        request: RunRequest,
        acquired: bool,
    ) -> None:
        status = InvocationStatus.FAILED
        error: dict[str, Any] | None = None
        required_action: dict[str, Any] | None = None
        asked_client = False
        heartbeat = asyncio.create_task(self._heartbeat(run))
        invocation_started(ref.app_name)
        held = acquired
        if held:
            lease_acquired()
        try:
            if not acquired:
                await self._wait_for_lease(run)
                held = True
                lease_acquired()
            async with asyncio.timeout(self._settings.max_invocation_seconds):
                async for event in runner.run_invocation(
                    user_id=ref.user_id,
                    session_id=ref.session_id,
                    new_message=request.new_message,
                    state_delta=request.state_delta,
                    run_config=self._run_config(request),
                    invocation_id=run.invocation_id,
                    user_event_id=run.user_event_id,
                    recover=run.recover,
                    fence=run.fence,
                ):
                    await run.channel.publish(event)
                    if run.announce and not event.partial:
                        self._announcer.announce(run.invocation_id)
                    if event.long_running_tool_ids and not event.partial:
                        asked_client = True
            status = InvocationStatus.COMPLETED
            # It may wait for the client (a parallel branch may ask early; a recovered one
            # may have been waiting already).
            if asked_client or run.recover:
                required_action = await self._required_action(runner, ref, run.invocation_id)
                if required_action is not None:
                    status = InvocationStatus.REQUIRES_ACTION
        except LeaseLost:
            run.lost = True  # a write found another attempt holding it: `_let_go` below
        except asyncio.CancelledError:
            if run.handed_back or run.lost:
                pass  # not this process's to end: `_let_go` below
            elif run.cancel_requested:
                status, error = InvocationStatus.CANCELLED, InvocationCancelled().marshal()
            else:  # the server is shutting down
                error = InvocationInterrupted("The server stopped during the invocation.").marshal()
        except TimeoutError:
            error = InvocationTimeout(
                f"The invocation ran longer than {self._settings.max_invocation_seconds} s."
            ).marshal()
        except AgentdError as exc:
            error = exc.marshal()
            if isinstance(exc, InvocationCancelled):
                status = InvocationStatus.CANCELLED
        except Exception:
            logger.exception("invocation %s failed", run.invocation_id)
            error = InternalError().marshal()
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        final = None
        if not (run.handed_back or run.lost):
            final = await self._outcomes.record(
                ref,
                run.fence,
                run.session_pk,
                mode=request.mode,
                create_time=run.create_time,
                status=status,
                error=error,
                required_action=required_action,
            )
            run.lost = final is None  # fenced: another attempt holds it
        if final is None:
            await self._let_go(run, ref, held)
        else:
            # The session may be free now (or this was the queued run others lined up behind).
            self._waiters.wake(run.session_pk)
            if run.claimed:  # the next of its session may be queued for any worker
                self._claim_wanted.set()
            if held:
                lease_released()
            invocation_finished(ref.app_name, status.value)
            if run.announce:
                self._announcer.announce(run.invocation_id)
            await run.channel.close(final)
            # A resume of the invocation may have started its next run meanwhile.
            if self._runs.get(run.invocation_id) is run:
                del self._runs[run.invocation_id]

    async def _let_go(self, run: LocalRun, ref: SessionRef, held: bool) -> None:
        """End a local run without an outcome: hand it back to the queue (shutdown), or leave
        it to the process that took it over. Its followers here get it as it now stands."""
        if run.handed_back:
            try:
                await asyncio.shield(self._store.hand_back(run.fence, run.session_pk))
            except Exception:  # its lease expires anyway: it is taken over a little later
                logger.exception("handing back invocation %s failed", run.invocation_id)
        if held:
            lease_released()
        invocation_finished(ref.app_name, "handed_back" if run.handed_back else "taken_over")
        try:
            current = (await self._store.get(ref, run.invocation_id)).invocation
        except AgentdError:
            current = None
        if current is not None:
            await run.channel.close(current, ended_here=False)
        if self._runs.get(run.invocation_id) is run:
            del self._runs[run.invocation_id]

    async def _required_action(
        self, runner: Runner, ref: SessionRef, invocation_id: str
    ) -> dict[str, Any] | None:
        """What the invocation waits for (its unanswered client calls), as stored JSON."""
        session = await runner.session_service.get_session(
            app_name=ref.app_name, user_id=ref.user_id, session_id=ref.session_id
        )
        return None if session is None else required_action(session.events, invocation_id)

    async def _wait_for_lease(self, run: LocalRun) -> None:
        deadline = time.monotonic() + self._settings.enqueue_timeout_seconds
        # In line before the first try, so a wake-up during that try is not missed.
        with self._waiters.waiting(run.session_pk, (run.create_time, run.invocation_id)) as me:
            while (
                attempt := await self._store.try_acquire(
                    run.invocation_id, run.session_pk, self.replica_id, self._settings.lease_seconds
                )
            ) is None:
                if run.cancel_requested:
                    raise InvocationCancelled("Cancelled while waiting for the session.")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SessionBusy(
                        "The session stayed busy for longer than the enqueue timeout "
                        f"({self._settings.enqueue_timeout_seconds} s)."
                    )
                enqueue_woken(await me.wait(min(ENQUEUE_POLL_SECONDS, remaining)))
        run.attempt = attempt

    async def _heartbeat(self, run: LocalRun) -> None:
        interval = max(min(self._settings.lease_seconds / 3, 2.0), 0.05)
        while True:
            await asyncio.sleep(interval)
            fence = run.fence
            try:
                cancel, owned = await self._store.heartbeat(
                    fence, run.session_pk, self._settings.lease_seconds
                )
            except Exception:
                logger.exception("renewing the lease of %s failed", run.invocation_id)
                continue
            if fence != run.fence:
                continue  # the run took the lease meanwhile (a new attempt): renew that one
            if not owned and not run.lost:
                # Another process took it over (this one stalled past its lease): stop here.
                logger.warning("invocation %s was taken over elsewhere", run.invocation_id)
                run.lost = True
                if run.task is not None:
                    run.task.cancel()
                return
            if cancel and not run.cancel_requested:
                run.cancel_requested = True
                if run.task is not None:
                    run.task.cancel()

    def _run_config(self, request: RunRequest) -> RunConfig:
        limit = self._settings.max_llm_calls
        asked = request.run_config.max_llm_calls if request.run_config else None
        streaming = request.run_config.streaming_mode if request.run_config else None
        return RunConfig(
            max_llm_calls=min(asked or limit, limit),
            streaming_mode=StreamingMode.SSE if streaming == "sse" else StreamingMode.NONE,
            custom_metadata=request.custom_metadata,
        )

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

    async def follow(
        self, handle: RunHandle, *, after_seq: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """Events after `after_seq` (then live ones) until the invocation ends, then `done`.

        By default, the events of the run the handle started (of a resumed invocation: this run's).
        """
        last = handle.after_seq if after_seq is None else after_seq
        channel, resumed_after = handle.channel, handle.after_seq
        if channel is None and (run := self._runs.get(handle.invocation.id)) is not None:
            channel, resumed_after = run.channel, run.resumed_after
        if channel is not None:
            if last < resumed_after:
                # Earlier runs of a resumed invocation: their events are only in the database.
                for event in await self._store.events(
                    handle.session_pk, handle.invocation.id, last
                ):
                    last = event.seq or last
                    yield StreamItem("event", event=event)
            async for item in channel.follow(last):
                if item.kind == "done" and not channel.ended_here:
                    break  # the run here let go of it (taken over, handed back): follow it there
                if item.kind == "event" and item.event is not None:
                    last = item.event.seq or last
                yield item
            else:
                return
        async for item in self._follow_stored(handle, last):
            yield item

    async def _follow_stored(self, handle: RunHandle, last: int) -> AsyncIterator[StreamItem]:
        """Follow a run of another process (or attempt) through the database."""
        # Read from the database each time the process running it announces new events
        # (PostgreSQL; asked for once with FOLLOW_CHANNEL), and on a timer for what no
        # announcement covers (SQLite; a lost notification).
        invocation_id = handle.invocation.id
        with self._followers.following(invocation_id) as woken:
            if self._store.listening:
                await self._store.announce(FOLLOW_CHANNEL, [invocation_id])
            while True:
                woken.clear()
                invocation = (await self._store.get(handle.ref, invocation_id)).invocation
                for event in await self._store.events(handle.session_pk, invocation_id, last):
                    last = event.seq or last
                    yield StreamItem("event", event=event)
                if invocation.status.terminal:
                    # Events committed just before the status changed are in the batch.
                    yield StreamItem("done", invocation=invocation)
                    return
                timeout = REMOTE_FALLBACK_SECONDS if self._store.listening else REMOTE_POLL_SECONDS
                try:
                    await asyncio.wait_for(woken.wait(), timeout=timeout)
                    follow_woken("notification")
                except TimeoutError:
                    follow_woken("timer")

    async def wait(self, handle: RunHandle) -> Invocation:
        """The invocation once it has ended (the run goes on if the waiter goes away)."""
        channel = handle.channel
        if channel is None and (run := self._runs.get(handle.invocation.id)) is not None:
            channel = run.channel
        if channel is not None:
            final = await asyncio.shield(channel.wait_closed())
            if channel.ended_here:
                return final
        async for item in self._follow_stored(handle, handle.after_seq):
            if item.kind == "done" and item.invocation is not None:
                return item.invocation
        raise AssertionError("follow ended without done")  # pragma: no cover

    async def cancel(self, ref: SessionRef, invocation_id: str) -> Invocation:
        """Ask the invocation to stop; a local run stops at once, a remote one within seconds."""
        invocation = await self._store.request_cancel(ref, invocation_id)
        run = self._runs.get(invocation_id)
        if run is not None and not run.cancel_requested and run.task is not None:
            run.cancel_requested = True
            run.task.cancel()
            await asyncio.shield(run.channel.wait_closed())
            invocation = (await self._store.get(ref, invocation_id)).invocation
        return invocation

    async def persisted_events(self, handle: RunHandle) -> builtins.list[Event]:
        """The persisted events of the run the handle started, from memory when it ran here."""
        channel = handle.channel
        if channel is not None and channel.closed and channel.ended_here:
            return channel.persisted()
        return await self._store.events(handle.session_pk, handle.invocation.id, handle.after_seq)


@contextlib.contextmanager
def _outcome_named(invocation_id: str) -> Iterator[None]:
    """An unconfirmed commit of an invocation's creation names the invocation, so its client
    can look it up (`GET .../invocations/{id}`) instead of sending the message again."""
    try:
        yield
    except OutcomeUnknown as exc:
        raise OutcomeUnknown(exc.detail, invocationId=invocation_id) from exc
