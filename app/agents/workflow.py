"""Workflow agents: SequentialAgent, ParallelAgent and LoopAgent.

ParallelAgent runs each child on its own branch (`parent.child`), so a child's model sees only its
own branch's history, while all children share the session state. The children's events are
interleaved as they come; each child waits until the Runner has persisted its event before it
continues, so a child reads its own writes and the session's events stay in commit order.
"""

import asyncio
from collections.abc import AsyncGenerator

from app.agents.base_agent import BaseAgent
from app.contexts.invocation import InvocationContext
from app.sessions.models import Event


class SequentialAgent(BaseAgent):
    """Runs its sub-agents one after the other."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for sub in self.sub_agents:
            async for event in sub.run_async(ctx):
                yield event
            if ctx.ended:
                return


class LoopAgent(BaseAgent):
    """Runs its sub-agents in a loop until one escalates or `max_iterations` is reached."""

    max_iterations: int | None = None

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in self.run_iterations(ctx, first=1):
            yield event

    async def run_iterations(
        self, ctx: InvocationContext, *, first: int, skip: int = 0
    ) -> AsyncGenerator[Event, None]:
        """Iterations from `first` on, skipping the first `skip` members in that one (how a
        resumed member's loop goes on after it); the iteration rides in each member's context.
        """
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
