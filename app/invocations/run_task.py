"""The run task: one invocation running in this process, from its session's lease to its end.

A run is an asyncio task of this process (`RunTasks.launch`). It waits for its session's lease if
it was queued, renews the lease while it runs (and reads cancel requests, which may come through
another replica, at each renewal), runs the app under AGENTD_MAX_INVOCATION_SECONDS, and ends in
one of two ways, named by one value (`RunEnd`):

- `Ended`: this process records the outcome (`OutcomeRecorder`: completed, requires_action,
  failed, cancelled), releases the lease and closes the run's channel with the final resource;
- `LetGo`: the outcome is not this process's to record: it handed the run back to the queue
  (shutdown), or another attempt holds it (the heartbeat or a fenced write found so; see
  docs/ARCHITECTURE.md, "Fencing"). Its followers here go on through the database.

Cancelling interrupts the run at its next await; an event being committed at that moment
finishes committing first (see Runner), so nothing is ever half-written.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator

from app.contexts.invocation import RunConfig, StreamingMode
from app.errors import (
    AgentdError,
    InternalError,
    InvocationCancelled,
    InvocationInterrupted,
    InvocationTimeout,
    LeaseLost,
    SessionBusy,
)
from app.invocations.channel import RunChannel
from app.invocations.compaction import compact_session
from app.invocations.models import InvocationStatus, RequiredAction, SessionRef
from app.invocations.outcomes import OutcomeRecorder
from app.invocations.publishing import EventPublisher
from app.invocations.run_state import (
    Ended,
    LetGo,
    LocalRun,
    RunEnd,
    RunHandle,
    RunRequest,
)
from app.invocations.runner import Runner
from app.invocations.store import InvocationStore, StoredInvocation
from app.invocations.wakeup import SessionWaiters
from app.observability.logging import bind_invocation
from app.observability.metrics import (
    enqueue_woken,
    invocation_finished,
    invocation_started,
    lease_acquired,
    lease_released,
)
from app.sessions.client_calls import PendingCalls
from app.sessions.models import Event
from app.settings import Settings

logger = logging.getLogger("agentd.invocations")


class RunTasks:
    """The runs of this process: launching them, their lease and heartbeat, and their end."""

    def __init__(
        self,
        *,
        store: InvocationStore,
        settings: Settings,
        replica_id: str,
        outcomes: OutcomeRecorder,
        waiters: SessionWaiters,
        publisher: EventPublisher,
        on_claimed_run_end: Callable[[], None],
    ) -> None:
        self._store = store
        self._settings = settings
        self._replica_id = replica_id
        self._outcomes = outcomes
        self._waiters = waiters
        self._publisher = publisher
        #: A claimed run ended: the next of its session may be queued for any worker.
        self._on_claimed_run_end = on_claimed_run_end
        self._runs: dict[str, LocalRun] = {}
        #: Compactions running in the background, one per session at most (by session key).
        self._compactions: dict[tuple[str, str, str], asyncio.Task[Event | None]] = {}

    def get(self, invocation_id: str) -> LocalRun | None:
        """The invocation's run in this process, if one runs it."""
        return self._runs.get(invocation_id)

    def __iter__(self) -> Iterator[LocalRun]:
        return iter(list(self._runs.values()))

    def __len__(self) -> int:
        """The runs this process holds (queued for their session, running, or ending)."""
        return len(self._runs)

    def claimed(self) -> int:
        """How many of the runs here were taken from the queue."""
        return sum(run.claimed for run in self._runs.values())

    def followed_elsewhere(self, invocation_id: str) -> None:
        """Another process follows the invocation: publish its committed events from now on."""
        run = self._runs.get(invocation_id)
        if run is not None and not run.publish_events:
            run.publish_events = True
            self._publisher.publish(invocation_id)  # what it committed before the ask

    def launch(
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
            held=stored.acquired,
            publish_events=claimed,
            owner=self._replica_id,
            attempt=invocation.attempt,
            waited_for=stored.waited_for,
        )
        self._runs[invocation.id] = run
        with bind_invocation(invocation.id):  # the task copies the context: its logs carry the id
            run.task = asyncio.create_task(
                self._execute(run, ref, runner, request), name=f"invocation {invocation.id}"
            )
        return RunHandle(
            ref=ref,
            invocation=invocation,
            session_pk=stored.session_pk,
            created=created,
            channel=run.channel,
            after_seq=stored.resumed_after,
        )

    async def cancel(self, invocation_id: str) -> bool:
        """Stop the invocation's run here at once, if one runs it; whether one did (once it
        has ended)."""
        run = self.stop(invocation_id)
        if run is None:
            return False
        await asyncio.shield(run.channel.wait_closed())
        return True

    def stop(self, invocation_id: str) -> LocalRun | None:
        """Cancel the invocation's run here, if one runs it and was not told already: the
        caller stored the cancel request (this process's `cancel`, or another's, which
        notified `CANCEL_CHANNEL`). The run it told, or None."""
        run = self._runs.get(invocation_id)
        if run is None or run.cancel_requested or run.task is None:
            return None
        run.cancel_requested = True
        run.task.cancel()
        return run

    async def shutdown(self, grace: float) -> None:
        """Let the runs go on for `grace` seconds, then hand the rest back to the queue."""
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        for run in list(self._runs.values()):
            if run.task is not None and not run.task.done():
                run.let_go = LetGo.HANDED_BACK
                run.task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Compactions are best effort: what the grace left them, then they stop (a cancelled
        # one stores nothing, or its event's commit finishes; the next invocation re-checks).
        compactions = list(self._compactions.values())
        if compactions and grace > 0:
            await asyncio.wait(compactions, timeout=grace)
        for task in compactions:
            task.cancel()
        await asyncio.gather(*compactions, return_exceptions=True)

    # -- one run ----------------------------------------------------------------------------

    async def _execute(
        self, run: LocalRun, ref: SessionRef, runner: Runner, request: RunRequest
    ) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(run))
        invocation_started(ref.app_name)
        if run.held:
            lease_acquired()
        try:
            end = await self._run(run, ref, runner, request)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        if await self._end(run, ref, request, end) is InvocationStatus.COMPLETED:
            self._compact_later(ref, runner, run.invocation_id)

    async def _run(
        self, run: LocalRun, ref: SessionRef, runner: Runner, request: RunRequest
    ) -> RunEnd:
        """Run the app (after waiting for the session's lease if queued); how it ended."""
        try:
            if not run.held:
                await self._wait_for_lease(run)
            pending = await self._pending_before(run)
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
                    if not event.partial:
                        pending.see(event)
                        if run.publish_events:
                            self._publisher.publish(run.invocation_id)
            # It may wait for the client: what its waiting events listed (a parallel branch may
            # ask early), and what it waited for before that nothing answered.
            if pending.incomplete():
                pending = await self._pending_in_log(run)
            action = RequiredAction.stored(pending.calls())
            if action is not None:
                return Ended(InvocationStatus.REQUIRES_ACTION, required_action=action)
            return Ended(InvocationStatus.COMPLETED)
        except LeaseLost:  # a write found another attempt holding it
            return LetGo.TAKEN_OVER
        except asyncio.CancelledError:
            if run.let_go is not None:
                return run.let_go
            if run.cancel_requested:
                return Ended(InvocationStatus.CANCELLED, InvocationCancelled().marshal())
            stopped = InvocationInterrupted("The server stopped during the invocation.")
            return Ended(InvocationStatus.FAILED, stopped.marshal())
        except TimeoutError:
            timeout = InvocationTimeout(
                f"The invocation ran longer than {self._settings.max_invocation_seconds} s."
            )
            return Ended(InvocationStatus.FAILED, timeout.marshal())
        except InvocationCancelled as exc:
            return Ended(InvocationStatus.CANCELLED, exc.marshal())
        except AgentdError as exc:
            return Ended(InvocationStatus.FAILED, exc.marshal())
        except Exception:
            logger.exception("invocation %s failed", run.invocation_id)
            return Ended(InvocationStatus.FAILED, InternalError().marshal())

    async def _end(
        self, run: LocalRun, ref: SessionRef, request: RunRequest, end: RunEnd
    ) -> InvocationStatus | None:
        """Record an `Ended` run's outcome and close its channel with it; let a `LetGo` go.
        The status recorded, if this process recorded one."""
        final = None
        if isinstance(end, Ended):
            final = await self._outcomes.record(
                ref,
                run.fence,
                run.session_pk,
                mode=request.mode,
                create_time=run.create_time,
                status=end.status,
                error=end.error,
                required_action=end.required_action,
            )
        if final is None or not isinstance(end, Ended):  # fenced: another attempt holds it
            await self._let_go(run, ref, end if isinstance(end, LetGo) else LetGo.TAKEN_OVER)
            return None
        # The session may be free now (or this was the queued run others lined up behind).
        self._waiters.wake(run.session_pk)
        if run.claimed:
            self._on_claimed_run_end()
        if run.held:
            lease_released()
        invocation_finished(ref.app_name, final.status.value)  # a late cancel may win
        if run.publish_events:
            self._publisher.publish(run.invocation_id)
        await run.channel.close(final)
        self._forget(run)
        return final.status

    def _compact_later(self, ref: SessionRef, runner: Runner, invocation_id: str) -> None:
        """Start the compaction the session may be due for, after the invocation's answer went
        out. One per session at a time here: while one runs, a later invocation's end skips
        (the one after it checks again). Across processes two may overlap; each stored
        compaction covers everything before its end, so either is a correct one to build from
        (`app.agents.compaction`)."""
        app = runner.app
        if app is None or app.events_compaction_config is None:
            return
        key = (ref.app_name, ref.user_id, ref.session_id)
        running = self._compactions.get(key)
        if running is not None and not running.done():
            return
        task = asyncio.create_task(
            compact_session(
                app,
                runner.session_service,
                app_name=ref.app_name,
                user_id=ref.user_id,
                session_id=ref.session_id,
                after_invocation=invocation_id,
            ),
            name=f"compaction after {invocation_id}",
        )
        self._compactions[key] = task
        task.add_done_callback(lambda done: self._compacted(key, done))

    def _compacted(self, key: tuple[str, str, str], task: "asyncio.Task[Event | None]") -> None:
        if self._compactions.get(key) is task:
            del self._compactions[key]

    async def _let_go(self, run: LocalRun, ref: SessionRef, how: LetGo) -> None:
        """End a local run without an outcome: hand it back to the queue (shutdown), or leave
        it to the attempt that took it over. Its followers here get it as it now stands."""
        if how is LetGo.HANDED_BACK:
            try:
                await asyncio.shield(self._store.hand_back(run.fence, run.session_pk))
            except Exception:  # its lease expires anyway: it is taken over a little later
                logger.exception("handing back invocation %s failed", run.invocation_id)
        if run.held:
            lease_released()
        invocation_finished(ref.app_name, how.value)
        try:
            current = (await self._store.get(ref, run.invocation_id)).invocation
        except AgentdError:
            current = None
        if current is not None:
            await run.channel.close(current, ended_here=False)
        self._forget(run)

    def _forget(self, run: LocalRun) -> None:
        # A resume of the invocation may have started its next run meanwhile.
        if self._runs.get(run.invocation_id) is run:
            del self._runs[run.invocation_id]

    async def _pending_before(self, run: LocalRun) -> PendingCalls:
        """What the invocation waits for as the run starts: what it waited for when this run
        resumed it; for a takeover, what its committed events say (the run goes on after them,
        and they may list calls already: a parallel branch that asked before the owner died)."""
        if run.recover:
            return await self._pending_in_log(run)
        earlier = run.waited_for.calls if run.waited_for is not None else []
        return PendingCalls(run.invocation_id, [call.pending() for call in earlier])

    async def _pending_in_log(self, run: LocalRun) -> PendingCalls:
        """What the invocation's committed events say it waits for: for a takeover, and for the
        rare run that lists a call made before it that the stored action does not describe
        (`PendingCalls.incomplete`)."""
        pending = PendingCalls(run.invocation_id)
        for event in await self._store.events(run.session_pk, run.invocation_id, after_seq=0):
            pending.see(event)
        return pending

    async def _wait_for_lease(self, run: LocalRun) -> None:
        deadline = time.monotonic() + self._settings.enqueue_timeout_seconds
        # In line before the first try, so a wake-up during that try is not missed.
        with self._waiters.waiting(run.session_pk, (run.create_time, run.invocation_id)) as me:
            while (
                attempt := await self._store.try_acquire(
                    run.invocation_id,
                    run.session_pk,
                    self._replica_id,
                    self._settings.lease_seconds,
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
                # AGENTD_ENQUEUE_POLL_SECONDS: wake-ups do the real work (app.invocations.wakeup),
                # the poll only bounds the delay when one is missing.
                poll = self._settings.enqueue_poll_seconds
                enqueue_woken(await me.wait(min(poll, remaining)))
        run.attempt = attempt
        run.held = True
        lease_acquired()

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
            if not owned and run.let_go is None:
                # Another process took it over (this one stalled past its lease): stop here.
                logger.warning("invocation %s was taken over elsewhere", run.invocation_id)
                run.let_go = LetGo.TAKEN_OVER
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
            max_context_tokens=(
                request.run_config.max_context_tokens if request.run_config else None
            ),
        )


__all__ = ["RunTasks"]
