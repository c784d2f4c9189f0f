"""BaseAgent: the agent tree, and the before/after agent callbacks around every agent's run.

A before-agent callback (plugins first) that returns Content skips the agent and ends the
invocation with that reply, as ADK does; an after-agent callback's Content replaces the agent's
output. State a callback writes rides on the event that callback produces; a callback that only
wrote state produces an actions-only event, so nothing it changed is lost. An agent that raises
tells the plugins' on_agent_error_callback (instead of the after-agent callbacks) and re-raises.
"""

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, ClassVar

from google.genai import types
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from app.agents.callbacks import CallbackSlot, dispatch
from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext
from app.errors import ResumeNotSupported
from app.plugins.manager import notify_plugins
from app.sessions.models import Event, EventActions, NodeInfo


@dataclass(frozen=True)
class FinishedChild:
    """A sub-agent that finished in a resumed invocation (see `BaseAgent._resume_after_async`)."""

    agent: "BaseAgent"
    #: The iteration of the innermost loop it ran in (1 outside loops); the hook runs in a
    #: context whose `loop_iteration` is this.
    iteration: int
    #: An event since the resume escalated (a loop stops).
    escalated: bool


class BaseAgent(BaseModel):
    """An agent: a name, an optional description, sub-agents and agent callbacks."""

    #: It runs its sub-agents in iterations and sets their context's `loop_iteration` (LoopAgent):
    #: a resumed child's recorded iteration is its own, so the agents above it start from 1.
    counts_iterations: ClassVar[bool] = False

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str
    description: str = ""
    sub_agents: list["BaseAgent"] = Field(default_factory=list)
    before_agent_callback: CallbackSlot = None
    after_agent_callback: CallbackSlot = None

    _parent_agent: "BaseAgent | None" = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:  # noqa: ARG002 - pydantic hook
        """Link sub-agents to their parent and refuse duplicate names in the tree."""
        for sub in self.sub_agents:
            if sub._parent_agent is not None and sub._parent_agent is not self:
                raise ValueError(f"Agent {sub.name!r} already has a parent.")
            sub._parent_agent = self
        names = [a.name for a in self._walk()]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"Agent names must be unique in a tree: {sorted(duplicates)}")

    @property
    def parent_agent(self) -> "BaseAgent | None":
        """The agent this one is a sub-agent of."""
        return self._parent_agent

    @property
    def root_agent(self) -> "BaseAgent":
        """The top of the tree."""
        agent: BaseAgent = self
        while agent._parent_agent is not None:
            agent = agent._parent_agent
        return agent

    def _walk(self) -> list["BaseAgent"]:
        found: list[BaseAgent] = [self]
        for sub in self.sub_agents:
            found.extend(sub._walk())
        return found

    def find_agent(self, name: str) -> "BaseAgent | None":
        """This agent or a descendant named `name`."""
        return next((a for a in self._walk() if a.name == name), None)

    def sub_agents_deep(self) -> list["BaseAgent"]:
        """Every descendant, depth first."""
        return self._walk()[1:]

    def find_sub_agent(self, name: str) -> "BaseAgent | None":
        """A descendant named `name`."""
        return next((a for a in self._walk()[1:] if a.name == name), None)

    def make_event(
        self,
        ctx: InvocationContext,
        *,
        content: types.Content | None = None,
        actions: EventActions | None = None,
        **fields: Any,
    ) -> Event:
        """An event authored by this agent in `ctx`'s invocation and branch."""
        return Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            content=content,
            actions=actions or EventActions(),
            node_info=NodeInfo(path=f"{self.name}@{ctx.loop_iteration}"),
            **fields,
        )

    async def run_async(self, parent_context: InvocationContext) -> AsyncGenerator[Event, None]:
        """Run this agent with its callbacks; yields the events it produces."""
        ctx = parent_context.for_agent(self)
        try:
            event = await self._callback_event(ctx, before=True)
            if event is not None:
                yield event
            if ctx.ended:
                return
            async for event in self._run_async_impl(ctx):
                yield event
            if ctx.ended:
                return
            event = await self._callback_event(ctx, before=False)
            if event is not None:
                yield event
        except Exception as error:
            # ADK's on_agent_error_callback: the plugins are told, the error goes on up.
            await notify_plugins(
                ctx.plugin_manager.plugins,
                "on_agent_error_callback",
                agent=self,
                callback_context=CallbackContext(ctx),
                error=error,
            )
            raise

    async def _callback_event(self, ctx: InvocationContext, *, before: bool) -> Event | None:
        actions = EventActions()
        callback_context = CallbackContext(ctx, event_actions=actions)
        content = await dispatch(
            ctx.plugin_manager,
            "before_agent_callback" if before else "after_agent_callback",
            self.before_agent_callback if before else self.after_agent_callback,
            plugin_kwargs={"agent": self, "callback_context": callback_context},
            callback_kwargs={"callback_context": callback_context},
        )
        if content is not None:
            if before:
                ctx.end()
            return self.make_event(ctx, content=_as_content(content), actions=actions)
        if actions.state_delta or actions.artifact_delta:
            return self.make_event(ctx, actions=actions)
        return None

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        """The agent's own work; subclasses override it."""
        del ctx
        raise NotImplementedError(f"{type(self).__name__} does not implement _run_async_impl")
        yield  # pragma: no cover - makes this an async generator

    async def _resume_after_async(
        self, ctx: InvocationContext, finished: FinishedChild
    ) -> AsyncGenerator[Event, None]:
        """What this agent runs in a resumed invocation after its sub-agent `finished.agent`
        ended: the rest of its own order of work, as if the child had never stopped to wait.

        An invocation that waited for the client (or whose process died) goes on at the agent
        that asked (`app.agents.resume`); every agent above it is then asked, innermost first,
        through this hook. An agent with sub-agents overrides it to be resumable (the workflow
        agents and LlmAgent do); this default refuses with `resume-not-supported`, naming the
        agent, because running nothing would silently drop the work it had left.
        """
        del ctx
        raise ResumeNotSupported(
            f"Agent {self.name!r} ({type(self).__name__}) cannot continue a resumed invocation "
            f"after its sub-agent {finished.agent.name!r} finished: implement "
            "`_resume_after_async` on it (see docs/ARCHITECTURE.md, 'Waiting and answering').",
            agent=self.name,
        )
        yield  # pragma: no cover - makes this an async generator


def _as_content(value: Any) -> types.Content:
    if isinstance(value, types.Content):
        return value
    if isinstance(value, str):
        return types.Content(role="model", parts=[types.Part(text=value)])
    raise TypeError(f"An agent callback must return types.Content or None, not {type(value)!r}")
