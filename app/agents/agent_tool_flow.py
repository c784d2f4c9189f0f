"""What an AgentTool's wrapped agent waits for, passed up to the client and back.

Asking: when the wrapped agent ends waiting for a long-running call's result or a credential, the
AgentTool answers its own call with a "waiting" response naming those inner calls
(`agentToolWaiting`) and keeping the wrapped agent's history. `passed_up_parts`
(`app.sessions.client_calls`) copies the inner calls (same ids, names and arguments) into the
calling agent's waiting event, which lists them in `long_running_tool_ids` and maps each to the
AgentTool call under `custom_metadata["agentToolCalls"]` (the whole step's mapping, also when
re-listed). To the client they look like any call it answers (the invocation's `requiredAction`
names the inner tool). The model never sees that event nor the client's answers to it
(`contents.py`): it never made those calls.

Answering: the client answers the inner calls by their ids. When the calling LlmAgent starts and
the latest message answers such calls (`resume_agent_tools`): while some inner calls of the same
step (everything one waiting event lists) are unanswered, it re-lists them and the invocation
waits again (answers are kept); once all are answered, the AgentTool calls of that step run again
through the normal tool path: each restores its wrapped agent and hands it the answers (see
`app.tools.agent_tool`). Nested AgentTools pass calls up level by level the same way.
"""

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING

from google.genai import types

from app.agents.confirmation_flow import end_of_step
from app.agents.functions import run_function_calls
from app.contexts.invocation import InvocationContext
from app.sessions.client_calls import PASSED_UP_KEY, answered_ids, passed_up
from app.sessions.models import Event

if TYPE_CHECKING:
    from app.agents.llm_agent import LlmAgent


async def resume_agent_tools(
    agent: "LlmAgent", ctx: InvocationContext
) -> AsyncGenerator[Event, None]:
    """If the latest message answers inner calls this agent passed up: wait for the rest of
    their step (re-listing them, ending the invocation), or run the step's AgentTool calls again
    and yield their function-response event (and, should they wait again, the next waiting
    event, ending the invocation)."""
    events = ctx.session.events
    latest = next((e for e in reversed(events) if e.content is not None), None)
    if latest is None or latest.author != "user":
        return
    answered_now = answered_ids(latest)
    if not answered_now:
        return
    listing = _latest_listing(agent, events, answered_now)
    if listing is None:
        return
    index, step = listing
    answered = _answered(events, set(step))
    unanswered = [inner for inner in step if inner not in answered]
    if unanswered:  # kept; the invocation waits for the rest of the step
        calls = {c.id: c for c in events[index].get_function_calls() if c.id}
        ctx.pause()
        yield agent.make_event(
            ctx,
            content=types.Content(
                role="model", parts=[types.Part(function_call=calls[i]) for i in unanswered]
            ),
            long_running_tool_ids=unanswered,
            custom_metadata={PASSED_UP_KEY: step},
        )
        return
    to_run = _own_calls(agent, events, set(step.values()))
    tools = {tool.name: tool for tool in await agent.tools_in(ctx)}
    response_event = await run_function_calls(agent, ctx, to_run, tools)
    for event in end_of_step(agent, ctx, to_run, response_event, wait_for_results=True).events:
        yield event


def _latest_listing(
    agent: "LlmAgent", events: Sequence[Event], answered: set[str]
) -> tuple[int, dict[str, str]] | None:
    """The last event of this agent passing up any of `answered`, with its step's mapping (a
    re-listing lists only the unanswered calls but maps the whole step)."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.author != agent.name:
            continue
        mapping = passed_up(event)
        if mapping and answered & set(mapping):
            return index, mapping
    return None


def _answered(events: Sequence[Event], ids: set[str]) -> set[str]:
    """Which of `ids` the user answered (inner call ids are unique: any answer is to them)."""
    answered: set[str] = set()
    for event in events:
        if event.author == "user":
            answered.update(r.id for r in event.get_function_responses() if r.id in ids)
    return answered


def _own_calls(
    agent: "LlmAgent", events: Sequence[Event], ids: set[str]
) -> list[types.FunctionCall]:
    """This agent's calls with `ids`, in the order it made them."""
    calls: dict[str, types.FunctionCall] = {}
    for event in events:
        if event.author != agent.name or passed_up(event):
            continue
        for call in event.get_function_calls():
            if call.id in ids:
                calls.setdefault(call.id, call)
    return list(calls.values())
