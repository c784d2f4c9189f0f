"""Tool confirmations in the agent loop: ADK's `adk_request_confirmation` round trip.

Asking: a tool whose `require_confirmation` holds (or that calls
`tool_context.request_confirmation(hint=, payload=)`) records a ToolConfirmation in its
function-response event's `requested_tool_confirmations` (`require_confirmation` also answers the
call with ADK's "requires confirmation" error and skips summarization). From that event the agent
builds one more (`request_client_input`): one `adk_request_confirmation` function call per
request, `args = {"originalFunctionCall": <the tool's call by alias>, "toolConfirmation": <hint,
confirmed, payload>}` (ADK's shape), each with a fresh `adk-` id listed in
`long_running_tool_ids`, together with the step's `adk_request_credential` calls, the calls an
AgentTool passes up and the ids of its long-running calls still without a result.

`end_of_step` puts the two in order and says whether the agent stops there. As in ADK 2.13's
recordings (`hitl_confirm.json`, `hitl_request_confirmation.json`), a waiting event that asks
only for confirmations streams (and is stored) BEFORE the function-response event it was built
from; and unless a tool skipped summarization (`require_confirmation` does), the model is then
called on the tool's response in the same run and speaks: the invocation still waits for the
confirmation, which the agent says by pausing once its loop ends. A waiting event that asks for
a credential or passes calls up comes after the response and stops the agent at once (agentd's
order: README "Differences from ADK").

Answering: the client sends a user message with function responses named
`adk_request_confirmation`, the request's id and `{"confirmed": bool, "payload"?: ...}` (ADK's
`{"response": "<json>"}` wrapper is accepted). The server refuses an answer that does not parse
before storing it (422, `app.invocations.answers`); one stored by other means is
a denial here. When an LlmAgent starts and that is the latest message (`resume_confirmed_tools`):

- the requests of the answered calls' step (this agent's requests whose original call came in
  the same model response) are gathered with every answer the session holds for them;
- if some are still unanswered, nothing runs and the model is not called: the agent yields a
  fresh event re-listing the unanswered requests (same ids, same args) in `long_running_tool_ids`
  and ends the invocation again, so its last event still says what it waits for;
- once all are answered, every original call runs again through the normal tool path with
  `tool_context.tool_confirmation` set, in ONE function-response event: a confirmed call runs its
  tool, a denied one never does (ADK's `{"error": "This tool call is rejected."}`); then the model
  goes on. A call whose confirmation was already consumed never runs again: an answer sent again
  is stored and nothing runs (ADK: an empty stream).

Only requests this agent authored, for calls this agent made, are honoured (the client chooses
the answer, never which tool runs or with what arguments). The model never sees the requests or
their answers (`app.sessions.client_calls.is_client_request_event`, used by `contents.py`), and
a call answered first with "requires confirmation" and then for real shows only its final answer
(see contents.py).
"""

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.genai import types

from app.agents.functions import run_function_calls
from app.contexts.invocation import InvocationContext
from app.sessions.client_calls import (
    PASSED_UP_KEY,
    REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
    answered_ids,
    calling_event,
    confirmation_request_parts,
    credential_request_parts,
    original_call_of,
    passed_up,
    passed_up_parts,
)
from app.sessions.models import Event
from app.sessions.tool_confirmation import ToolConfirmation

if TYPE_CHECKING:
    from app.agents.llm_agent import LlmAgent


@dataclass(frozen=True)
class StepEnd:
    """How a step whose tools ran ends: its events in the order they are yielded, whether one
    of them asks the client for something, and whether the agent stops there (paused)."""

    events: list[Event]
    asked: bool
    stops: bool


def end_of_step(
    agent: "LlmAgent",
    ctx: InvocationContext,
    calls: Sequence[types.FunctionCall],
    response_event: Event | None,
    *,
    wait_for_results: bool = False,
) -> StepEnd:
    """The events that end the step of `calls` (its function-response event and the waiting
    event built from it, if any) and whether the agent stops to wait for the client (the
    context is then paused). See the module's docstring for the order and the rule."""
    waiting = request_client_input(
        agent, ctx, calls, response_event, wait_for_results=wait_for_results
    )
    if waiting is None:
        return StepEnd([response_event] if response_event is not None else [], False, False)
    if response_event is None:
        ctx.pause()
        return StepEnd([waiting], True, True)
    if not _asks_confirmations_only(waiting):
        ctx.pause()
        return StepEnd([response_event, waiting], True, True)
    # ADK streams the confirmation request before the response it was built from, and calls
    # the model on that response unless a tool skipped summarization.
    stops = bool(response_event.actions.skip_summarization)
    if stops:
        ctx.pause()
    return StepEnd([waiting, response_event], True, stops)


def _asks_confirmations_only(waiting: Event) -> bool:
    """Whether every call `waiting` lists is an `adk_request_confirmation` call it holds."""
    listed = set(waiting.long_running_tool_ids or ())
    asked = {
        call.id
        for call in waiting.get_function_calls()
        if call.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
    }
    return bool(listed) and listed <= asked and not passed_up(waiting)


def request_client_input(
    agent: "LlmAgent",
    ctx: InvocationContext,
    calls: Sequence[types.FunctionCall],
    response_event: Event | None,
    *,
    wait_for_results: bool = False,
) -> Event | None:
    """The event asking the client for what the step of `calls` needs (None if nothing): its
    credential and confirmation requests, the inner calls its AgentTool calls pass up (see
    agent_tool_flow), plus (listed only) its long-running calls still without a result.
    `wait_for_results`: wait for those even when nothing is requested (calls run again after a
    confirmation already have an answer in the history, so only this event says they are still
    open). Whether the agent stops there is `end_of_step`'s to say."""
    parts: list[types.Part] = []
    credentials: list[types.Part] = []
    if response_event is not None:
        credentials = credential_request_parts(response_event)
        parts = credentials + confirmation_request_parts(calls, response_event)
    # Listed: the requests' ids, then the inner calls an AgentTool passes up (the calls they
    # carry along only to name the inner tool are not listed).
    asked = [p.function_call.id or "" for p in parts if p.function_call]
    inner, passed = passed_up_parts(response_event)
    parts += inner
    answered = {r.id for r in response_event.get_function_responses()} if response_event else set()
    tools = {tool.name: tool for tool in agent.tools_known(ctx)}
    results = [
        call.id
        for call in calls
        if call.id
        and call.id not in answered
        and (tool := tools.get(call.name or "")) is not None
        and tool.is_long_running
    ]
    if not parts and not (wait_for_results and results):
        return None
    ids = asked + list(passed) + results
    # A credential request keeps the auth flow's role (the response's); confirmations are ADK's
    # model-role event.
    role: str | None = "model"
    if credentials and response_event is not None and response_event.content is not None:
        role = response_event.content.role
    return agent.make_event(
        ctx,
        content=types.Content(role=role, parts=parts) if parts else None,
        long_running_tool_ids=ids,
        custom_metadata={PASSED_UP_KEY: passed} if passed else None,
    )


def answered_branch(agent: "LlmAgent", events: Sequence[Event]) -> str | None:
    """The branch of this agent's event whose calls the latest (user) message answers: the branch
    a resumed agent continues on (the runner starts it without one, e.g. in a ParallelAgent)."""
    latest = next((e for e in reversed(events) if e.content is not None), None)
    if latest is None or latest.author != "user":
        return None
    event = calling_event(events, answered_ids(latest), author=agent.name)
    return event.branch if event is not None else None


@dataclass
class _Request:
    """One `adk_request_confirmation` call of this agent, and what became of it."""

    call: types.FunctionCall
    original_id: str
    answer: ToolConfirmation | None = None
    answered_at: int = -1


async def resume_confirmed_tools(
    agent: "LlmAgent", ctx: InvocationContext
) -> AsyncGenerator[Event, None]:
    """If the latest message answers `adk_request_confirmation` calls of this agent: wait for the
    rest of their step's answers (re-listing them, ending the invocation), or run the step's
    confirmed calls again and yield their function-response event (and, should they ask again,
    the next request, ending the invocation)."""
    events = ctx.session.events
    latest = next((e for e in reversed(events) if e.content is not None), None)
    if latest is None or latest.author != "user":
        return
    answered_now = {
        r.id
        for r in latest.get_function_responses()
        if r.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME and r.id
    }
    if not answered_now:
        return
    requests, calls, responded = _history(agent, events)
    live = {
        rid: request
        for rid, request in requests.items()
        if not any(i > request.answered_at for i in responded.get(request.original_id, ()))
        or request.answer is None
    }
    asked = [live[rid] for rid in answered_now if rid in live]
    if not asked:
        # Only answers to requests already consumed (a replay) or not this agent's: nothing
        # runs, and the model is not called for a message it never sees.
        parts = latest.content.parts if latest.content else None
        if all(p.function_response is not None for p in parts or ()):
            ctx.pause()
        return
    # The step: every call of the model responses the answered requests' calls came in.
    step_events = {calls[r.original_id][0] for r in asked}
    step = [c for i in sorted(step_events) for c in events[i].get_function_calls() if c.id]
    step_ids = {c.id for c in step}
    group = {rid: r for rid, r in live.items() if r.original_id in step_ids}
    unanswered = [r for r in group.values() if r.answer is None]
    if unanswered:
        tools = {tool.name: tool for tool in await agent.tools_in(ctx)}
        results = [
            c.id or ""
            for c in step
            if c.id not in responded
            and (tool := tools.get(c.name or "")) is not None
            and tool.is_long_running
        ]
        ctx.pause()
        yield agent.make_event(
            ctx,
            content=types.Content(
                role="model", parts=[types.Part(function_call=r.call) for r in unanswered]
            ),
            long_running_tool_ids=[r.call.id or "" for r in unanswered] + results,
        )
        return
    confirmations: dict[str, ToolConfirmation] = {}
    for request in group.values():  # in request order: a later request's answer wins
        assert request.answer is not None
        confirmations[request.original_id] = request.answer
    to_run = [c for c in step if c.id in confirmations]
    tools = {tool.name: tool for tool in await agent.tools_in(ctx)}
    response_event = await run_function_calls(agent, ctx, to_run, tools, confirmations)
    for event in end_of_step(agent, ctx, to_run, response_event, wait_for_results=True).events:
        yield event


def _history(
    agent: "LlmAgent", events: Sequence[Event]
) -> tuple[dict[str, _Request], dict[str, tuple[int, types.FunctionCall]], dict[str, list[int]]]:
    """This agent's confirmation requests (with their first answers), the calls this agent made
    (by id: index of their event, the call), and where each call id got a function response."""
    calls: dict[str, tuple[int, types.FunctionCall]] = {}
    requests: dict[str, _Request] = {}
    responded: dict[str, list[int]] = {}
    for index, event in enumerate(events):
        if event.author == agent.name:
            for call in event.get_function_calls():
                if not call.id:
                    continue
                if call.name != REQUEST_CONFIRMATION_FUNCTION_CALL_NAME:
                    calls.setdefault(call.id, (index, call))
                elif call.id not in requests:
                    original_id = original_call_of(call).get("id")
                    if isinstance(original_id, str) and original_id in calls:
                        requests[call.id] = _Request(call=call, original_id=original_id)
        for response in event.get_function_responses():
            if not response.id:
                continue
            responded.setdefault(response.id, []).append(index)
            request = requests.get(response.id)
            if (
                event.author == "user"
                and response.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
                and request is not None
                and request.answer is None
            ):
                request.answer = ToolConfirmation.from_response(response.response)
                request.answered_at = index
    return requests, calls, responded
