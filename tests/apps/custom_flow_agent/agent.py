"""A test app for resuming a user's own workflow agent (issue 27, acceptance 3).

`LastToFirst` is a BaseAgent subclass with an order of its own: it runs its sub-agents from the
last to the first, and implements the resume hook (`_resume_after_async`), so an invocation that
stopped in one of them goes on with the ones before it in the list. `NoHook` runs the same order
without the hook: a resume through it fails with `resume-not-supported`.

The app: "go" makes `worker` call `slow_step`, which waits until the test creates
`<AGENTD_TEST_GATES>/<session id>.open`; "pay" makes it call `pay`, which needs the user's
confirmation; "book" makes it call `book`, which asks for one itself and lets the model
speak (ADK's `request_confirmation`). Then `closer` (first in the list, so it runs last) says
"closed". Every model call, tool run and closer run appends a JSON line to
`<AGENTD_TEST_GATES>/<session id>.log` with its process id.
"""

import asyncio
import json
import os
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.genai import types

from app.agents import BaseAgent, LlmAgent
from app.agents.base_agent import FinishedChild
from app.contexts.invocation import InvocationContext
from app.models.llm import LlmRequest
from app.models.scripted import Rule, ScriptedLlm
from app.sessions.models import Event
from app.tools import FunctionTool
from app.tools.tool_context import ToolContext

GATE_SECONDS = 120


class LastToFirst(BaseAgent):
    """Runs its sub-agents from the last to the first; resumable."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in self._down_from(ctx, len(self.sub_agents) - 1):
            yield event

    async def _resume_after_async(
        self, ctx: InvocationContext, finished: FinishedChild
    ) -> AsyncGenerator[Event, None]:
        """The sub-agents before the finished one in the list: those after it in this order."""
        async for event in self._down_from(ctx, self.sub_agents.index(finished.agent) - 1):
            yield event

    async def _down_from(self, ctx: InvocationContext, last: int) -> AsyncGenerator[Event, None]:
        for sub in reversed(self.sub_agents[: last + 1]):
            async for event in sub.run_async(ctx):
                yield event
            if ctx.ended:
                return


class NoHook(BaseAgent):
    """The same order as LastToFirst, without the resume hook."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for sub in reversed(self.sub_agents):
            async for event in sub.run_async(ctx):
                yield event
            if ctx.ended:
                return


def _log(session_id: str, **entry: Any) -> None:
    gates = os.environ.get("AGENTD_TEST_GATES")
    if gates:
        with (Path(gates) / f"{session_id}.log").open("a") as log:
            log.write(json.dumps({**entry, "pid": os.getpid(), "time": time.time()}) + "\n")


async def slow_step(tool_context: ToolContext) -> str:
    """Waits until the session's gate is open (the test kills the process meanwhile)."""
    _log(tool_context.session_id, what="tool", name="slow_step")
    opened = Path(os.environ["AGENTD_TEST_GATES"]) / f"{tool_context.session_id}.open"
    async with asyncio.timeout(GATE_SECONDS):
        while not opened.exists():
            await asyncio.sleep(0.02)
    return "slow done"


def pay(amount: int, tool_context: ToolContext) -> str:
    """Pays `amount`."""
    _log(tool_context.session_id, what="tool", name="pay")
    return f"paid {amount}"


class Closer(BaseAgent):
    """Says "closed" (and logs that it ran)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        _log(ctx.session.id, what="agent", name="closer")
        yield self.make_event(
            ctx, content=types.Content(role="model", parts=[types.Part(text="closed")])
        )


def book(tool_context: ToolContext) -> dict[str, str]:
    """Books a seat; asks for the seat class first (`request_confirmation`)."""
    _log(tool_context.session_id, what="tool", name="book")
    if tool_context.tool_confirmation is None:
        tool_context.request_confirmation(hint="Which class?", payload={"seat": "economy"})
        return {"status": "awaiting confirmation"}
    return {"status": "booked"}


def _logged(agent: str) -> Any:
    def before_model(callback_context: Any, llm_request: LlmRequest) -> None:
        del llm_request
        _log(callback_context.session.id, what="model", agent=agent)

    return before_model


def build(flow: type[BaseAgent], name: str) -> BaseAgent:
    """The app's tree under a root of type `flow`."""
    worker = LlmAgent(
        name=f"{name}_worker",
        model=ScriptedLlm(
            rules=[
                Rule(when_user="^go$", call=("slow_step", {})),
                Rule(when_user="^pay$", call=("pay", {"amount": 5})),
                Rule(when_user="^book$", call=("book", {})),
                Rule(when_tool="book", say="worked: {status}"),
                Rule(when_tool="slow_step", say="worked: {result}"),
                Rule(when_tool="pay", say="worked: {result}"),
            ]
        ),
        tools=[slow_step, FunctionTool(pay, require_confirmation=True), book],
        before_model_callback=_logged("worker"),
    )
    closer = Closer(name=f"{name}_closer")
    return flow(name=name, sub_agents=[closer, worker])


root_agent = build(LastToFirst, "custom_flow_agent")
