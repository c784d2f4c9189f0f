"""Resuming an invocation inside its agents: where it goes on, and who runs what follows.

A new message that answers no call goes to `agent_to_run` (ADK's transfer rules). An
invocation goes on without a new turn of its own in two cases: the client answered a call it
waited for (a confirmation, a credential, a long-running tool's result), or the process that ran
it died and another attempt took it over (recovery). `resume_point` reads the history once and
says where: the agent that goes on, the loop iteration it ran in, and whether it had already
finished (then only what follows it runs).

What follows a finished agent is its parent's business, not the Runner's: `resume_async` runs
the agent, then asks each ancestor in turn for what it runs after its child finished
(`BaseAgent._resume_after_async`, the hook). SequentialAgent runs its later members, LoopAgent
its later members and iterations, ParallelAgent nothing (its other branches ran to their end while
this one waited), LlmAgent nothing (an agent it transferred to answers for it). A user's own
BaseAgent subclass with sub-agents implements the hook to be resumable; without it the resume
fails with `resume-not-supported`, naming that agent, instead of silently stopping.
"""

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, replace

from app.agents.base_agent import BaseAgent, FinishedChild
from app.agents.llm_agent import LlmAgent
from app.contexts.invocation import InvocationContext
from app.sessions.client_calls import (
    answered_ids,
    calling_event,
    is_waiting_event,
    pending_client_calls,
)
from app.sessions.models import Event


@dataclass(frozen=True)
class ResumePoint:
    """Where an invocation goes on."""

    agent: BaseAgent
    #: The iteration of the innermost loop the agent ran in (1 outside loops).
    iteration: int = 1
    #: The agent had finished (a recovered run after its final answer): only what follows runs.
    done: bool = False
    #: Its finished step escalated (a loop above it stops).
    escalated: bool = False
    #: A recovered run whose last event waits for the client or recorded its error: nothing runs.
    stops: bool = False
    #: A recovered run whose agent asked the client and then went on (the model speaks after a
    #: `request_confirmation`, as in ADK): it finishes its step, and nothing after it runs.
    waits: bool = False
    #: Found from the last committed event of a dead process's run (not from a client's answer).
    recovered: bool = False


def resume_point(
    root: BaseAgent, events: Sequence[Event], invocation_id: str, *, recover: bool
) -> ResumePoint | None:
    """Where invocation `invocation_id` goes on, from one backward scan of `events`; None when
    it is not a resume (a new message that answers no call, or a recovered run of which only
    the user's message was committed: both start from the top).

    `recover`: the run continues a dead process's attempt, from its last committed event. The
    last event's author goes on: after its model response it runs that response's calls again
    (LlmAgent reruns them), after its function responses it calls the model; if the event ended
    its turn (a final answer, an escalation) it is done; a transfer goes on with its target. An
    agent with calls still pending for the client (it asked, then its model spoke, as after
    `request_confirmation`) finishes its step and nothing after it runs (`waits`).

    Otherwise, when the last event is the user's function response, the agent that made the
    answered call goes on, in the loop iteration it asked in.
    """
    if not events:
        return None
    if recover:
        last = next(
            (e for e in reversed(events) if e.invocation_id == invocation_id and not e.partial),
            None,
        )
        if last is None or last.author == "user":
            return None
        point = _after(root, last)
        asking = {call.agent for call in pending_client_calls(events, invocation_id)}
        return replace(point, waits=True) if point.agent.name in asking else point
    answered = answered_ids(events[-1]) if events[-1].author == "user" else set()
    if not answered:  # a plain message (most turns): no copy of the history to scan
        return None
    asked = calling_event(events[:-1], answered)
    agent = root.find_agent(asked.author) if asked is not None else None
    return None if agent is None or asked is None else ResumePoint(agent, iteration_of(asked))


def agent_to_run(root: BaseAgent, events: Sequence[Event]) -> BaseAgent:
    """The agent a new message that answers no call goes to: the agent that answered last if
    the conversation was transferred to it (and every agent up to the root allows transfer),
    else the root (ADK's rules)."""
    for event in reversed(events):
        if event.author == "user":
            continue
        if event.author == root.name:
            return root
        agent = root.find_sub_agent(event.author)
        if isinstance(agent, LlmAgent) and _transferable_to_root(agent):
            return agent
        if agent is not None:
            return root
    return root


def _transferable_to_root(agent: LlmAgent) -> bool:
    """Whether every agent from `agent` up to the root is an LlmAgent that allows transfer."""
    current: BaseAgent | None = agent
    while current is not None:
        if not isinstance(current, LlmAgent):
            return False
        if current.disallow_transfer_to_parent and current.parent_agent is not None:
            return False
        current = current.parent_agent
    return True


def _after(root: BaseAgent, last: Event) -> ResumePoint:
    """Where a recovered run goes on after its last committed event `last`."""
    agent = root.find_agent(last.author) or root
    iteration = iteration_of(last)
    target = last.actions.transfer_to_agent
    if target and last.get_function_responses():
        moved = root.find_agent(target)
        if moved is not None:
            return ResumePoint(moved, recovered=True)
    if last.error_code or is_waiting_event(last):
        return ResumePoint(agent, iteration, done=True, stops=True, recovered=True)
    escalated = bool(last.actions.escalate)
    done = escalated or (last.is_final_response() and not last.get_function_calls())
    return ResumePoint(agent, iteration, done=done, escalated=escalated, recovered=True)


def iteration_of(event: Event) -> int:
    """The loop iteration `event` was made in: the `<agent>@<iteration>` of its nodeInfo.path,
    which `BaseAgent.make_event` writes from the context's `loop_iteration` (1 if absent)."""
    path = event.node_info.path if event.node_info is not None else ""
    _, _, count = path.rpartition("@")
    return int(count) if count.isdigit() else 1


async def resume_async(point: ResumePoint, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
    """Run `point.agent` (unless done), then what each ancestor runs after its child finished.

    Each ancestor's hook gets the finished child, the iteration it ran in and whether an event
    since the resume escalated; it runs in that iteration's context, so the events of the
    members it runs record the iteration they belong to. The history records only the
    innermost loop's iteration: above an agent that counts iterations (`counts_iterations`,
    LoopAgent), an outer loop's hook gets iteration 1.
    """
    escalated = point.escalated
    if not point.done:
        async for event in point.agent.run_async(ctx.replace(loop_iteration=point.iteration)):
            escalated = escalated or bool(event.actions.escalate)
            yield event
    if point.waits:
        ctx.pause()
        return
    child, iteration = point.agent, point.iteration
    while (parent := child.parent_agent) is not None and not ctx.ended:
        finished = FinishedChild(agent=child, iteration=iteration, escalated=escalated)
        parent_ctx = ctx.for_agent(parent).replace(loop_iteration=iteration)
        async for event in parent._resume_after_async(parent_ctx, finished):
            escalated = escalated or bool(event.actions.escalate)
            yield event
        if parent.counts_iterations:
            iteration = 1
        child = parent


__all__ = ["ResumePoint", "agent_to_run", "iteration_of", "resume_async", "resume_point"]
