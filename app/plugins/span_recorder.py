"""Records each invocation's spans (invocation, agents, model calls, tools) for ADK's dev UI.

The spans and attributes are those ADK's own tracing writes and its dev UI reads
(`google/adk/telemetry/tracing.py`: `invocation`, `invoke_agent {agent}`, `call_llm`,
`execute_tool {tool}`, with `gcp.vertex.agent.*` and `gen_ai.*` attributes), kept in the
process's bounded `SpanStore` (app.observability.spans). agentd installs this plugin in every
runner it serves (app.invocations.manager), after the app's own plugins, so an app plugin that
short-circuits a hook simply leaves that span out. Hooks only take timestamps and a few
attributes; the request, response and tool JSON are computed when the trace is read.
"""

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.genai import types

from app.observability.spans import (
    MAX_REQUEST_CONTENTS,
    Span,
    SpanStore,
    new_span_id,
    new_trace_id,
    span_store,
)
from app.plugins.base_plugin import BasePlugin

if TYPE_CHECKING:
    from app.agents.base_agent import BaseAgent
    from app.contexts.callback import CallbackContext
    from app.contexts.invocation import InvocationContext
    from app.contexts.tool import ToolContext
    from app.models.llm import LlmRequest, LlmResponse
    from app.sessions.models import Event
    from app.tools.base_tool import BaseTool

NAME = "agentd_span_recorder"
#: Invocations whose spans are open at once; beyond that the oldest is forgotten (a run that
#: was cancelled or lost its lease never reaches after_run, so its entry must not live forever).
MAX_OPEN_RUNS = 1_000


@dataclass
class _Run:
    """The open spans of one running invocation."""

    invocation: Span
    agents: dict[str, Span] = field(default_factory=dict)  # by agent name
    models: dict[str, Span] = field(default_factory=dict)  # running call_llm, by agent name
    answered: dict[str, Span] = field(default_factory=dict)  # ended call_llm awaiting its event
    tools: dict[str, Span] = field(default_factory=dict)  # by function call id
    requests: dict[str, "LlmRequest"] = field(default_factory=dict)  # of running call_llm

    def close(self, error: Exception | None = None) -> None:
        """End every span still open (the invocation's last)."""
        for agent_name, request in self.requests.items():
            model_span = self.models.get(agent_name)
            if model_span is not None:
                _keep_request(model_span, request)
        self.requests.clear()
        for span in (*self.tools.values(), *self.models.values(), *self.agents.values()):
            span.end()
        if error is not None:
            self.invocation.attributes["error.type"] = type(error).__name__
        self.invocation.end()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _request_json(
    model: str | None, config: types.GenerateContentConfig, contents: list[types.Content]
) -> str:
    """ADK's `_build_llm_request_for_trace`: model, config (no schema, no HTTP options) and the
    contents without inline bytes."""
    config_json = config.model_dump(
        exclude_none=True, exclude={"response_schema", "http_options"}, mode="json"
    )
    contents_json = [
        types.Content(
            role=content.role, parts=[part for part in content.parts or [] if not part.inline_data]
        ).model_dump(exclude_none=True, mode="json")
        for content in contents
    ]
    return _json({"model": model, "config": config_json, "contents": contents_json})


def _keep_request(span: Span, request: "LlmRequest | None") -> None:
    """Attach the request the model answered to its span: its model, config and latest contents,
    never the request itself (its contents are the whole conversation: app.observability.spans)."""
    if request is None:
        return
    model, config, contents = request.model, request.config, request.contents
    kept = contents[-MAX_REQUEST_CONTENTS:]
    if len(kept) < len(contents):
        span.attributes["agentd.llm_request.contents_omitted"] = len(contents) - len(kept)
    span.detail("gcp.vertex.agent.llm_request", lambda: _request_json(model, config, kept))


class SpanRecorder(BasePlugin):
    """Runner-wide hooks that open and end spans in `store` (the process's by default)."""

    def __init__(self, store: SpanStore | None = None) -> None:
        super().__init__(NAME)
        self._store = store or span_store()
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    def _span(
        self,
        run: _Run,
        name: str,
        parent: Span,
        attributes: dict[str, Any] | None = None,
        *,
        detailed: bool = False,
    ) -> Span:
        root = run.invocation
        span = Span(
            name=name,
            trace_id=root.trace_id,
            span_id=new_span_id(),
            parent_span_id=parent.span_id,
            app_name=root.app_name,
            user_id=root.user_id,
            session_id=root.session_id,
            attributes={
                "gcp.vertex.agent.invocation_id": root.attributes["gcp.vertex.agent.invocation_id"],
                "gcp.vertex.agent.session_id": root.session_id,
                **(attributes or {}),
            },
        )
        self._store.add(span, detailed=detailed)
        return span

    def _parent(self, run: _Run, agent_name: str) -> Span:
        return run.agents.get(agent_name, run.invocation)

    # -- invocation ---------------------------------------------------------------------------

    async def before_run_callback(
        self, *, invocation_context: "InvocationContext"
    ) -> types.Content | None:
        session = invocation_context.session
        invocation_id = invocation_context.invocation_id
        span = Span(
            name="invocation",
            trace_id=new_trace_id(),
            span_id=new_span_id(),
            parent_span_id=None,
            app_name=session.app_name,
            user_id=session.user_id,
            session_id=session.id,
            attributes={
                "gcp.vertex.agent.invocation_id": invocation_id,
                "gcp.vertex.agent.session_id": session.id,
            },
        )
        self._store.add(span)
        previous = self._runs.pop(invocation_id, None)
        if previous is not None:
            previous.close()
        self._runs[invocation_id] = _Run(invocation=span)
        while len(self._runs) > MAX_OPEN_RUNS:
            self._runs.popitem(last=False)[1].close()
        return None

    async def after_run_callback(self, *, invocation_context: "InvocationContext") -> None:
        run = self._runs.pop(invocation_context.invocation_id, None)
        if run is not None:
            run.close()

    async def on_run_error_callback(
        self, *, invocation_context: "InvocationContext", error: Exception
    ) -> None:
        run = self._runs.pop(invocation_context.invocation_id, None)
        if run is not None:
            run.close(error)

    async def on_event_callback(
        self, *, invocation_context: "InvocationContext", event: "Event"
    ) -> "Event | None":
        """Link the event to the span that produced it: a function response to its tool's span,
        any other final event of an agent to that agent's last model call."""
        run = self._runs.get(invocation_context.invocation_id)
        if run is None or event.partial:
            return None
        responses = [
            part.function_response
            for part in (event.content.parts or [] if event.content else [])
            if part.function_response is not None
        ]
        if responses:
            for response in responses:
                tool_span = run.tools.pop(response.id or "", None)
                if tool_span is not None:
                    self._store.link_event(event.id, tool_span)
        else:
            model_span = run.answered.pop(event.author, None)
            if model_span is not None:
                self._store.link_event(event.id, model_span)
        return None

    # -- agents -------------------------------------------------------------------------------

    async def before_agent_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext"
    ) -> types.Content | None:
        run = self._runs.get(callback_context.invocation_id)
        if run is None:
            return None
        parent_agent = agent.parent_agent
        parent = run.agents.get(parent_agent.name) if parent_agent is not None else None
        run.agents[agent.name] = self._span(
            run,
            f"invoke_agent {agent.name}",
            parent or run.invocation,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent.name,
                "gen_ai.agent.description": agent.description,
                "gen_ai.conversation.id": run.invocation.session_id,
            },
        )
        return None

    async def after_agent_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext"
    ) -> types.Content | None:
        self._end_agent(callback_context.invocation_id, agent.name, None)
        return None

    async def on_agent_error_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext", error: Exception
    ) -> None:
        self._end_agent(callback_context.invocation_id, agent.name, error)

    def _end_agent(self, invocation_id: str, agent_name: str, error: Exception | None) -> None:
        run = self._runs.get(invocation_id)
        span = run.agents.pop(agent_name, None) if run is not None else None
        if span is not None:
            if error is not None:
                span.attributes["error.type"] = type(error).__name__
            span.end()

    # -- model calls --------------------------------------------------------------------------

    async def before_model_callback(
        self, *, callback_context: "CallbackContext", llm_request: "LlmRequest"
    ) -> "LlmResponse | None":
        run = self._runs.get(callback_context.invocation_id)
        if run is None:
            return None
        agent_name = callback_context.agent_name
        span = self._span(
            run,
            "call_llm",
            self._parent(run, agent_name),
            {"gen_ai.system": "gcp.vertex.agent", "gen_ai.request.model": llm_request.model or ""},
            detailed=True,
        )
        # The agent's own before-model callbacks run after this hook and may still change the
        # request: it is read when the model answers (`_keep_request`).
        run.requests[agent_name] = llm_request
        run.models[agent_name] = span
        return None

    async def after_model_callback(
        self, *, callback_context: "CallbackContext", llm_response: "LlmResponse"
    ) -> "LlmResponse | None":
        """Each chunk of a streamed answer replaces the recorded response; the final one ends
        the span."""
        run = self._runs.get(callback_context.invocation_id)
        span = run.models.get(callback_context.agent_name) if run is not None else None
        if run is None or span is None:
            return None
        span.detail(
            "gcp.vertex.agent.llm_response",
            lambda: llm_response.model_dump_json(exclude_none=True),
        )
        usage = llm_response.usage_metadata
        if usage is not None:
            if usage.prompt_token_count is not None:
                span.attributes["gen_ai.usage.input_tokens"] = usage.prompt_token_count
            if usage.candidates_token_count is not None:
                span.attributes["gen_ai.usage.output_tokens"] = usage.candidates_token_count
        if not llm_response.partial:
            span.end()
            _keep_request(span, run.requests.pop(callback_context.agent_name, None))
            run.answered[callback_context.agent_name] = run.models.pop(callback_context.agent_name)
        return None

    async def on_model_error_callback(
        self,
        *,
        callback_context: "CallbackContext",
        llm_request: "LlmRequest",
        error: Exception,
    ) -> "LlmResponse | None":
        run = self._runs.get(callback_context.invocation_id)
        if run is None:
            return None
        run.requests.pop(callback_context.agent_name, None)
        span = run.models.pop(callback_context.agent_name, None)
        if span is not None:
            span.attributes["error.type"] = type(error).__name__
            span.end()
            _keep_request(span, llm_request)
        return None

    # -- tools --------------------------------------------------------------------------------

    async def before_tool_callback(
        self, *, tool: "BaseTool", tool_args: dict[str, Any], tool_context: "ToolContext"
    ) -> dict[str, Any] | None:
        run = self._runs.get(tool_context.invocation_id)
        if run is None:
            return None
        call_id = tool_context.function_call_id or ""
        span = self._span(
            run,
            f"execute_tool {tool.name}",
            self._parent(run, tool_context.agent_name),
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.description": tool.description,
                "gen_ai.tool.type": type(tool).__name__,
                "gen_ai.tool.call.id": call_id,
            },
            detailed=True,
        )
        span.detail("gcp.vertex.agent.tool_call_args", lambda: _json(tool_args))
        run.tools[call_id] = span
        return None

    async def after_tool_callback(
        self,
        *,
        tool: "BaseTool",  # noqa: ARG002 - the hook's signature
        tool_args: dict[str, Any],  # noqa: ARG002
        tool_context: "ToolContext",
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        span = self._tool_span(tool_context)
        if span is not None:
            span.detail("gcp.vertex.agent.tool_response", lambda: _json(result))
            span.end()
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: "BaseTool",  # noqa: ARG002 - the hook's signature
        tool_args: dict[str, Any],  # noqa: ARG002
        tool_context: "ToolContext",
        error: Exception,
    ) -> dict[str, Any] | None:
        span = self._tool_span(tool_context)
        if span is not None:
            span.attributes["error.type"] = type(error).__name__
            span.end()
        return None

    def _tool_span(self, tool_context: "ToolContext") -> Span | None:
        run = self._runs.get(tool_context.invocation_id)
        return run.tools.get(tool_context.function_call_id or "") if run is not None else None
