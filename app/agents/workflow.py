"""Workflow agents: SequentialAgent, ParallelAgent and LoopAgent.

ParallelAgent runs each child on its own branch (`parent.child`), so a child's model sees only its
own branch's history, while all children share the session state. The children's events are
interleaved as they come; each child waits until the Runner has persisted its event before it
continues, so a child reads its own writes and the session's events stay in commit order.

Each also says what it runs after a child that finished in a resumed invocation
(`_resume_after_async`, see `app.agents.resume`): what it would have run had the child not
stopped to wait.
"""

import asyncio
from collections.abc import AsyncGenerator
from typing import ClassVar

from app.agents.base_agent import BaseAgent, FinishedChild
from app.contexts.invocation import InvocationContext
from app.sessions.client_calls import pending_client_calls
from app.sessions.models import Event


class SequentialAgent(BaseAgent):
    """Runs its sub-agents one after the other."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in self._run_members(ctx, first=0):
            yield event

    async def _resume_after_async(
        self, ctx: InvocationContext, finished: FinishedChild
    ) -> AsyncGenerator[Event, None]:
        """The members after the finished one."""
        first = self.sub_agents.index(finished.agent) + 1
        async for event in self._run_members(ctx, first=first):
            yield event

    async def _run_members(
        self, ctx: InvocationContext, *, first: int
    ) -> AsyncGenerator[Event, None]:
        for sub in self.sub_agents[first:]:
            async for event in sub.run_async(ctx):
                yield event
            if ctx.ended:
                return


class LoopAgent(BaseAgent):
    """Runs its sub-agents in a loop until one escalates or `max_iterations` is reached."""

    max_iterations: int | None = None
    counts_iterations: ClassVar[bool] = True

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in self._run_iterations(ctx, first=1):
            yield event

    async def _resume_after_async(
        self, ctx: InvocationContext, finished: FinishedChild
    ) -> AsyncGenerator[Event, None]:
        """The members after the finished one in its iteration, then the later iterations;
        nothing if an event since the resume escalated."""
        if finished.escalated:
            return
        skip = self.sub_agents.index(finished.agent) + 1
        async for event in self._run_iterations(ctx, first=finished.iteration, skip=skip):
            yield event

    async def _run_iterations(
        self, ctx: InvocationContext, *, first: int, skip: int = 0
    ) -> AsyncGenerator[Event, None]:
        """Iterations from `first` on, skipping the first `skip` members in that one; the
        iteration rides in each member's context (and so in its events' nodeInfo.path)."""
        iteration = first - 1
        while self.max_iterations is None or iteration < self.max_iterations:
            iteration += 1
            for index, sub in enumerate(self.sub_agents):
                if iteration == first and index < skip:
                    continue
                async for event in sub.run_async(ctx.replace(loop_iteration=iteration)):
                    yield event
                    if event.actions.escalate:
                        return
                if ctx.ended:
                    return


_DONE = object()


class ParallelAgent(BaseAgent):
    """Runs its sub-agents concurrently, each on its own branch."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        queue: asyncio.Queue[tuple[object, asyncio.Future[None] | None]] = asyncio.Queue()
        pauses: list[list[bool]] = []

        async def drive(sub: BaseAgent) -> None:
            branch = f"{ctx.branch}.{sub.name}" if ctx.branch else f"{self.name}.{sub.name}"
            branch_ctx = ctx.for_agent(sub, branch=branch)
            branch_ctx.branch_pause = [False]  # this branch's own pause (InvocationContext.pause)
            pauses.append(branch_ctx.branch_pause)
            try:
                async for event in sub.run_async(branch_ctx):
                    persisted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                    await queue.put((event, persisted))
                    await persisted
            finally:
                await queue.put((_DONE, None))

        try:
            async with asyncio.TaskGroup() as group:
                for sub in self.sub_agents:
                    group.create_task(drive(sub))
                running = len(self.sub_agents)
                while running:
                    item, persisted = await queue.get()
                    if item is _DONE:
                        running -= 1
                        continue
                    assert isinstance(item, Event)
                    assert persisted is not None
                    try:
                        yield item
                    finally:
                        persisted.set_result(None)
        except BaseExceptionGroup as group:
            # Surface the branch's own error (e.g. a callback's), not the TaskGroup wrapper.
            raise group.exceptions[0] from None
        if any(paused[0] for paused in pauses):
            # A branch waits for the client: the parallel step is not over, so what follows it
            # (in a sequence above) waits too.
            ctx.pause()

    async def _resume_after_async(
        self, ctx: InvocationContext, finished: FinishedChild
    ) -> AsyncGenerator[Event, None]:
        """Nothing: the other branches ran to their end while the finished one waited. The
        parallel step is over (what follows it runs) unless another branch still waits for
        the client; then the invocation keeps waiting."""
        others = {
            agent.name
            for branch in self.sub_agents
            if branch is not finished.agent
            for agent in (branch, *branch.sub_agents_deep())
        }
        pending = pending_client_calls(ctx.session.events, ctx.invocation_id)
        if any(call.agent in others for call in pending):
            ctx.pause()
        return
        yield  # pragma: no cover - makes this an async generator
