"""AgentTool: another agent used as a tool; its final answer is the tool's result.

The wrapped agent runs in a private in-memory session that starts with a copy of the caller's
state and has the caller's session id, so artifacts it saves are staged for the caller's session
and commit with the caller's function-response event. State it writes and artifacts it saves are
forwarded to the calling tool's context; its model calls count against the same max_llm_calls.

A confirmation a tool of the wrapped agent asks for is propagated up (ADK's behaviour): when the
wrapped agent's run ends waiting for `adk_request_confirmation` answers, the AgentTool call itself
asks for confirmation (the inner hint and payload; several inner requests are confirmed together)
and answers with ADK's "requires confirmation" error, keeping the wrapped agent's history under
`agentToolEvents` in that stored response (the model never sees it: the call's final answer
replaces it). Confirmed, the call runs again: the wrapped agent's history is restored, the inner
requests are answered with the person's answer (payload included) and the wrapped agent goes on
from there (its earlier tools do not run again). Denied, the AgentTool never runs, so neither does
the inner tool. A credential requested inside the wrapped agent is not propagated.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.genai import types
from pydantic import BaseModel, TypeAdapter

from app.contexts.invocation import InvocationContext
from app.contexts.tool import ToolContext
from app.sessions.client_calls import (
    AGENT_TOOL_EVENTS_KEY,
    AGENT_TOOL_WAITING_KEY,
    REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
    is_waiting_event,
    waiting_calls,
)
from app.sessions.in_memory import InMemorySessionService
from app.sessions.models import Event
from app.sessions.state import State
from app.sessions.tool_confirmation import ToolConfirmation
from app.tools.base_tool import BaseTool
from app.tools.function_tool import CONFIRMATION_REQUIRED

#: ADK's "requires confirmation"-style answer for a call waiting for the client's answers.
WAITING_FOR_CLIENT = {"status": "The agent is waiting for the client's answer."}

if TYPE_CHECKING:
    from app.agents.base_agent import BaseAgent


class AgentTool(BaseTool):
    """Wraps an agent so a model can call it with a `request` string (or its input_schema)."""

    def __init__(self, agent: "BaseAgent", skip_summarization: bool = False) -> None:
        super().__init__(name=agent.name, description=agent.description)
        self.agent = agent
        self.skip_summarization = skip_summarization

    def _schemas(self) -> tuple[type[BaseModel] | None, Any]:
        """The wrapped agent's input_schema and output_schema (LlmAgent fields; else None)."""
        return (
            getattr(self.agent, "input_schema", None),
            getattr(self.agent, "output_schema", None),
        )

    def get_declaration(self) -> types.FunctionDeclaration:
        """The agent's input_schema as parameters; without one, a `request` string."""
        input_schema, _ = self._schemas()
        if input_schema is not None:
            return types.FunctionDeclaration(
                name=self.name,
                description=self.description,
                parameters_json_schema=input_schema.model_json_schema(),
            )
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"request": types.Schema(type=types.Type.STRING)},
                required=["request"],
            ),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the agent on `request`; return its last text answer."""
        if self.skip_summarization:
            tool_context.actions.skip_summarization = True
        parent: InvocationContext = tool_context._invocation_context
        sessions = InMemorySessionService()
        state = {
            k: v
            for k, v in tool_context.state.to_dict().items()
            if not k.startswith(State.TEMP_PREFIX)
        }
        session = await sessions.create_session(
            app_name=parent.app_name,
            user_id=parent.user_id,
            session_id=parent.session.id,
            state=state,
        )
        input_schema, output_schema = self._schemas()
        text = (
            input_schema.model_validate(args).model_dump_json(exclude_none=True)
            if input_schema is not None
            else str(args.get("request", ""))
        )
        message = types.Content(role="user", parts=[types.Part(text=text)])
        agent = self.agent
        kept = _kept_response(tool_context, self.name)
        resumed: list[Event] | None = None
        answers: Event | None = None
        if (
            kept is not None and kept.waiting
        ):  # the client answered what the wrapped agent waits for
            resumed = kept.history
            answers = _client_answers(tool_context, kept)
        elif kept is not None and tool_context.tool_confirmation is not None:
            resumed = kept.history  # the person confirmed what the wrapped agent asked
            answers = _answers(
                parent.invocation_id,
                _confirmation_requests(_last_waiting(resumed) or resumed[-1]),
                tool_context.tool_confirmation,
            )
        if resumed is None:
            await sessions.append_event(
                session, Event(author="user", invocation_id=parent.invocation_id, content=message)
            )
        else:  # the wrapped agent goes on from where it asked
            for event in resumed:
                await sessions.append_event(session, event)
            message = next(
                (e.content for e in resumed if e.author == "user" and e.content), message
            )
            agent = self.agent.find_agent(resumed[-1].author) or self.agent
            if answers is not None:
                await sessions.append_event(session, answers)
        # The wrapped agent runs in its own session (and branch) of the same invocation.
        ctx = parent.replace(
            session_service=sessions,
            agent=agent,
            session=session,
            user_content=message,
            branch=None,
        )
        last_text = ""
        # The event the wrapped agent stopped on to wait: not always its last (ADK streams a
        # confirmation request before the response it was built from, and after a
        # `request_confirmation` the model speaks).
        last_event: Event | None = None
        async for event in agent.run_async(ctx):
            if event.partial:
                continue
            await sessions.append_event(session, event)
            if is_waiting_event(event) or last_event is None or not is_waiting_event(last_event):
                last_event = event
            for key, value in event.actions.state_delta.items():
                tool_context.state[key] = value
            tool_context.actions.artifact_delta.update(event.actions.artifact_delta)
            if event.content and event.content.parts:
                text = "".join(p.text or "" for p in event.content.parts if not p.thought)
                if text:
                    last_text = text
        ctx.shared.ended = False  # the wrapped agent ending its run does not end the caller's
        if last_event is not None:
            confirmations = _confirmation_requests(last_event)
            if confirmations:
                return _ask_up(tool_context, confirmations, session.events)
            # Long-running results and credential requests: passed up to the client.
            waiting = waiting_calls(last_event)
            if waiting:
                return _pass_up(tool_context, waiting, session.events)
        if output_schema is not None and last_text:  # ADK: structured answers stay structured
            adapter: TypeAdapter[Any] = TypeAdapter(output_schema)
            return adapter.dump_python(
                adapter.validate_json(last_text), mode="json", exclude_none=True
            )
        return last_text


def _last_waiting(events: list[Event]) -> Event | None:
    """The latest of `events` that asks the client for something."""
    return next((e for e in reversed(events) if is_waiting_event(e)), None)


def _confirmation_requests(event: Event) -> list[types.FunctionCall]:
    """The `adk_request_confirmation` calls `event` waits for."""
    return [c for c in waiting_calls(event) if c.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME]


def _ask_up(
    tool_context: ToolContext, requests: list[types.FunctionCall], events: list[Event]
) -> dict[str, Any]:
    """Ask the person, for this call, what the wrapped agent asked; keep its history."""
    asked = [
        ToolConfirmation.model_validate((c.args or {}).get("toolConfirmation") or {})
        for c in requests
    ]
    if len(asked) == 1:
        tool_context.request_confirmation(hint=asked[0].hint, payload=asked[0].payload)
    else:
        tool_context.request_confirmation(hint="\n".join(a.hint for a in asked if a.hint))
    tool_context.actions.skip_summarization = True
    return {**CONFIRMATION_REQUIRED, AGENT_TOOL_EVENTS_KEY: _dump(events)}


@dataclass(frozen=True)
class _Kept:
    """The wrapped agent's history an earlier run of this very call kept while it waited."""

    history: list[Event]
    #: The inner calls it waits for the client to answer (empty: it waits for a confirmation).
    waiting: list[str]
    #: Where in the caller's session the kept response is (the client's answers come after).
    index: int


def _kept_response(tool_context: ToolContext, name: str) -> _Kept | None:
    """What this call kept when it last waited (None for a first run). Read from the calling
    agent's own stored response, never from anything the client sent. The search stops at the
    model response that made the call: a first run (its call is the latest event) reads one
    event, not the whole history."""
    call_id = tool_context.function_call_id
    if not call_id:
        return None
    ctx = tool_context._invocation_context
    events = ctx.session.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.author != ctx.agent.name:
            continue
        if any(call.id == call_id for call in event.get_function_calls()):
            return None  # reached the call itself: no response of it was kept
        for response in event.get_function_responses():
            if response.id != call_id or response.name != name:
                continue
            body = response.response or {}
            kept = body.get(AGENT_TOOL_EVENTS_KEY)
            if not isinstance(kept, list) or not kept:
                return None  # answered for good: this is not a resumption
            waiting = body.get(AGENT_TOOL_WAITING_KEY)
            return _Kept(
                history=[Event.model_validate(item) for item in kept],
                waiting=[w for w in waiting if isinstance(w, str)]
                if isinstance(waiting, list)
                else [],
                index=index,
            )
    return None


def _pass_up(
    tool_context: ToolContext, calls: list[types.FunctionCall], events: list[Event]
) -> dict[str, Any]:
    """Answer this call with "waiting", keeping the wrapped agent's history and naming the inner
    calls the client answers (the calling agent's waiting event lists them)."""
    tool_context.actions.skip_summarization = True
    return {
        **WAITING_FOR_CLIENT,
        AGENT_TOOL_WAITING_KEY: [c.id for c in calls if c.id],
        AGENT_TOOL_EVENTS_KEY: _dump(events),
    }


def _client_answers(tool_context: ToolContext, kept: _Kept) -> Event | None:
    """The client's answers to the inner calls, as the wrapped agent's next user message (the
    latest answer per call, in the order the calls were listed)."""
    ctx = tool_context._invocation_context
    wanted = set(kept.waiting)
    latest: dict[str, types.Part] = {}
    for event in ctx.session.events[kept.index + 1 :]:
        if event.author != "user" or event.content is None:
            continue
        for part in event.content.parts or ():
            response = part.function_response
            if response is not None and response.id in wanted:
                latest[response.id] = part
    parts = [latest[w] for w in kept.waiting if w in latest]
    if not parts:
        return None
    return Event(
        author="user",
        invocation_id=ctx.invocation_id,
        content=types.Content(role="user", parts=parts),
    )


def _dump(events: list[Event]) -> list[dict[str, Any]]:
    history = [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events]
    for item in history:
        item.pop("seq", None)
    return history


def _answers(
    invocation_id: str,
    requests: list[types.FunctionCall],
    answer: ToolConfirmation | None,
) -> Event:
    """The user message answering the wrapped agent's requests with the person's answer."""
    response = (answer or ToolConfirmation()).wire()
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                id=c.id, name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, response=response
            )
        )
        for c in requests
    ]
    return Event(
        author="user", invocation_id=invocation_id, content=types.Content(role="user", parts=parts)
    )
