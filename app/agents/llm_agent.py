"""LlmAgent: the model -> tools -> model loop, with the model and tool callbacks.

One step builds an LlmRequest (instructions, the branch's history, tool declarations), runs the
before-model callbacks (plugins first; a response skips the model), calls the model (streaming
yields partial events that are never persisted), runs the after-model callbacks on the final
response and yields it as an event carrying the model callbacks' state writes. Function calls in
it run concurrently, each with its own ToolContext; their results become one function-response
event whose actions merge every call's deltas (different keys all survive). The loop continues
until a final answer, a transfer, an escalation, the end of the invocation, or max_llm_calls.
"""

import inspect
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Literal

from google.genai import types
from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter

from app.agents.agent_tool_flow import resume_agent_tools
from app.agents.auth_flow import resume_authorized_tools
from app.agents.base_agent import BaseAgent, FinishedChild
from app.agents.callbacks import CallbackSlot, dispatch
from app.agents.confirmation_flow import (
    answered_branch,
    end_of_step,
    resume_confirmed_tools,
)
from app.agents.contents import build_contents
from app.agents.functions import run_function_calls
from app.agents.instructions import inject_session_state
from app.agents.request_shaping import (
    apply_code_executor,
    apply_planner,
    process_response,
    static_instruction_text,
)
from app.code_executors.base_code_executor import BaseCodeExecutor
from app.code_executors.built_in_code_executor import BuiltInCodeExecutor
from app.code_executors.code_execution_utils import CodeExecutionInput, result_part
from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext, StreamingMode
from app.contexts.readonly import ReadonlyContext
from app.contexts.tool import ToolContext
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.models.registry import LLMRegistry
from app.observability.metrics import record_llm_call
from app.planners.base_planner import BasePlanner
from app.sessions.client_calls import is_waiting_event
from app.sessions.models import Event, EventActions
from app.tools.base_tool import BaseTool
from app.tools.base_toolset import BaseToolset
from app.tools.builtin import transfer_to_agent
from app.tools.function_tool import FunctionTool
from app.tools.set_model_response_tool import SetModelResponseTool, structured_answer

InstructionProvider = Callable[[ReadonlyContext], str | Awaitable[str]]
StaticInstruction = str | types.Content | types.Part | list[str | types.Part]
ToolUnion = Callable[..., Any] | BaseTool | BaseToolset


class LlmAgent(BaseAgent):
    """An agent driven by a model that may call tools and transfer to other agents."""

    model: str | BaseLlm = ""
    instruction: str | InstructionProvider = ""
    global_instruction: str | InstructionProvider = ""
    #: Sent first in the system instruction, never templated; `instruction` then goes into the
    #: contents (ADK: a stable prefix that providers' context caches can reuse).
    static_instruction: StaticInstruction | None = None
    tools: list[ToolUnion] = Field(default_factory=list)
    generate_content_config: types.GenerateContentConfig | None = None
    include_contents: Literal["default", "none"] = "default"
    #: The type the final answer must be (a pydantic model, or any type pydantic validates).
    output_schema: Any = None
    #: The arguments this agent takes when it is used as an AgentTool.
    input_schema: type[BaseModel] | None = None
    output_key: str | None = None
    planner: BasePlanner | None = None
    code_executor: BaseCodeExecutor | None = None
    disallow_transfer_to_parent: bool = False
    disallow_transfer_to_peers: bool = False
    before_model_callback: CallbackSlot = None
    after_model_callback: CallbackSlot = None
    on_model_error_callback: CallbackSlot = None
    before_tool_callback: CallbackSlot = None
    after_tool_callback: CallbackSlot = None
    on_tool_error_callback: CallbackSlot = None

    _canonical_tools: tuple[tuple[int, ...], list[BaseTool]] | None = PrivateAttr(default=None)

    # -- configuration --------------------------------------------------------------------

    @property
    def canonical_model(self) -> BaseLlm:
        """The model instance, inherited from the nearest LlmAgent ancestor if unset."""
        agent: BaseAgent | None = self
        while agent is not None:
            if isinstance(agent, LlmAgent) and agent.model:
                model = agent.model
                return model if isinstance(model, BaseLlm) else LLMRegistry.new_llm(model)
            agent = agent.parent_agent
        raise ValueError(f"No model found for agent {self.name!r}.")

    @property
    def canonical_tools(self) -> list[BaseTool]:
        """The tools as BaseTool instances (plain functions wrapped once, not on every step);
        toolsets' tools are known only once resolved (`tools_in`)."""
        key = tuple(map(id, self.tools))
        if self._canonical_tools is None or self._canonical_tools[0] != key:
            wrapped = [
                t if isinstance(t, BaseTool) else FunctionTool(t)
                for t in self.tools
                if not isinstance(t, BaseToolset)
            ]
            self._canonical_tools = (key, wrapped)
        return list(self._canonical_tools[1])

    async def tools_in(self, ctx: InvocationContext) -> list[BaseTool]:
        """The tools, toolsets resolved (ADK's async `canonical_tools`): each toolset is asked
        once per invocation, before this agent's first model call, in `tools` order."""
        resolved = ctx.shared.resolved_tools.get(self.name)
        if resolved is not None:
            return list(resolved)
        if not any(isinstance(t, BaseToolset) for t in self.tools):
            return self.canonical_tools
        readonly = ReadonlyContext(ctx)
        tools: list[BaseTool] = []
        wrapped = iter(self.canonical_tools)
        for tool in self.tools:
            if isinstance(tool, BaseToolset):
                tools.extend(await tool.get_tools_with_prefix(readonly))
            else:
                tools.append(next(wrapped))
        ctx.shared.resolved_tools[self.name] = tools
        return list(tools)

    def tools_known(self, ctx: InvocationContext) -> list[BaseTool]:
        """The tools as far as this invocation resolved them (`tools_in`), for sync callers."""
        resolved = ctx.shared.resolved_tools.get(self.name)
        return list(resolved) if resolved is not None else self.canonical_tools

    def transfer_targets(self) -> list[BaseAgent]:
        """Agents this one may hand the conversation to."""
        targets = list(self.sub_agents)
        parent = self.parent_agent
        if isinstance(parent, LlmAgent):
            if not self.disallow_transfer_to_parent:
                targets.append(parent)
            if not self.disallow_transfer_to_peers:
                targets.extend(a for a in parent.sub_agents if a is not self)
        return targets

    async def _resume_after_async(
        self, ctx: InvocationContext, finished: FinishedChild
    ) -> AsyncGenerator[Event, None]:
        """Nothing: its sub-agents are transfer targets, and the one it transferred to answered
        for it; what follows is the business of the agents above (ADK's transfer rules)."""
        del ctx, finished
        return
        yield  # pragma: no cover - makes this an async generator

    # -- the loop -------------------------------------------------------------------------

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        asked = False
        async for event in self._run_steps(ctx):
            asked = asked or (event.author == self.name and is_waiting_event(event))
            yield event
        if asked and not ctx.ended:
            # A tool asked for a confirmation and the model went on (ADK calls it on the tool's
            # response): the invocation still waits for the answer, and what would follow this
            # agent (a workflow's next member) runs once it comes.
            ctx.pause()

    async def _run_steps(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        branch = answered_branch(self, ctx.session.events)
        if branch is not None and branch != ctx.branch:  # resumed: go on where it asked
            ctx = ctx.for_agent(self, branch=branch)
        async for event in resume_authorized_tools(self, ctx):
            yield event
        async for event in resume_confirmed_tools(self, ctx):
            yield event
        async for event in resume_agent_tools(self, ctx):
            yield event
        outcome = _StepOutcome()
        async for event in self._rerun_open_calls(ctx, outcome):
            yield event
        if outcome.done:
            return
        while not ctx.ended:
            outcome = _StepOutcome()
            async for event in self._run_one_step(ctx, outcome):
                yield event
            if outcome.done:
                return

    async def _run_one_step(
        self, ctx: InvocationContext, outcome: "_StepOutcome"
    ) -> AsyncGenerator[Event, None]:
        llm_request = await self._build_request(ctx)
        ctx.increment_llm_call_count()
        actions = EventActions()
        callback_context = CallbackContext(ctx, event_actions=actions)
        model_event: Event | None = None
        async for response in self._call_model(ctx, callback_context, llm_request):
            model_event = self._response_event(ctx, response, actions, model_event)
            if not response.partial:
                self._save_output(callback_context, model_event)
            yield model_event
        if model_event is None or model_event.partial:
            outcome.done = True
            return
        if model_event.error_code:
            outcome.done = True
            return
        async for event in self._after_response(ctx, model_event, llm_request.tools_dict, outcome):
            yield event

    async def _rerun_open_calls(
        self, ctx: InvocationContext, outcome: "_StepOutcome"
    ) -> AsyncGenerator[Event, None]:
        """In a recovered run (the process running the invocation died and another took it
        over), when the session ends with this agent's model response and its calls have no
        stored responses, run them (long-running ones too: whether they had run is unknown),
        then go on as after that response. Tools are at-least-once: they get
        `tool_context.idempotency_key` to dedupe."""
        if not ctx.shared.recovering:
            return
        ctx.shared.recovering = False  # only the agent the recovery starts with
        events = ctx.session.events
        last = events[-1] if events else None
        if last is None or last.author != self.name or last.invocation_id != ctx.invocation_id:
            return
        calls = last.get_function_calls()
        if last.partial or not calls:
            return
        tools = {tool.name: tool for tool in await self.tools_in(ctx)}
        async for event in self._after_response(ctx, last, tools, outcome, calls=calls):
            yield event

    async def _after_response(
        self,
        ctx: InvocationContext,
        model_event: Event,
        tools_dict: dict[str, Any],
        outcome: "_StepOutcome",
        *,
        calls: list[types.FunctionCall] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """What follows a model response: its code or its calls (`calls`: only those), and
        what they lead to."""
        calls = model_event.get_function_calls() if calls is None else calls
        if not calls:
            code_result = await self._execute_code(ctx, model_event)
            if code_result is None:
                outcome.done = True
            else:  # the model continues with the code's output
                yield code_result
            return
        response_event = await run_function_calls(self, ctx, calls, tools_dict)
        if response_event is None:  # only long-running tools: the client answers later
            outcome.done = True
            return
        step = end_of_step(self, ctx, calls, response_event)
        for event in step.events:
            yield event
        if step.stops:  # a tool asked for a credential or a confirmation: the client answers
            outcome.done = True  # later
            return
        answer = structured_answer(
            response_event.content.parts or [] if response_event.content else []
        )
        if answer is not None:  # set_model_response: its arguments are the final answer
            outcome.done = True
            yield self._structured_event(ctx, answer)
            return
        merged = response_event.actions
        if merged.transfer_to_agent:
            outcome.done = True
            target = self.root_agent.find_agent(merged.transfer_to_agent)
            if target is None:
                raise ValueError(f"Agent {merged.transfer_to_agent!r} not found for transfer.")
            async for event in target.run_async(ctx):
                yield event
            return
        if merged.escalate or merged.skip_summarization:
            outcome.done = True

    # -- model ----------------------------------------------------------------------------

    async def _build_request(self, ctx: InvocationContext) -> LlmRequest:
        """The request for the next model call, built in ADK's order (see request_shaping)."""
        llm = self.canonical_model
        config = (
            self.generate_content_config.model_copy(deep=True)
            if self.generate_content_config
            else types.GenerateContentConfig()
        )
        llm_request = LlmRequest(model=llm.model, config=config)
        schema_by_tool = self.output_schema is not None and bool(self.tools)
        if schema_by_tool and llm.capabilities.output_schema_with_tools:
            schema_by_tool = False
        if self.output_schema is not None and not schema_by_tool:
            llm_request.set_output_schema(self.output_schema)
        readonly = ReadonlyContext(ctx)
        root = self.root_agent
        if isinstance(root, LlmAgent) and root.global_instruction:
            llm_request.append_instructions(
                [await _resolve_instruction(root.global_instruction, readonly)]
            )
        dynamic: types.Content | None = None
        if self.static_instruction is not None:
            llm_request.append_instructions([static_instruction_text(self.static_instruction)])
        if self.instruction:
            text = await _resolve_instruction(self.instruction, readonly)
            if self.static_instruction is None:
                llm_request.append_instructions([text])
            else:
                dynamic = types.Content(role="user", parts=[types.Part(text=text)])
        contents = build_contents(
            ctx, self.name, self.include_contents, estimate=self.canonical_model.estimate_tokens
        )
        llm_request.contents = [*contents, dynamic] if dynamic is not None else contents
        if self.planner is not None:
            apply_planner(self.planner, readonly, llm_request)
        if self.code_executor is not None:
            apply_code_executor(self.code_executor, llm_request)
        tools = await self.tools_in(ctx)
        if schema_by_tool:
            tools.append(SetModelResponseTool(self.output_schema))
            llm_request.append_instructions([_SET_MODEL_RESPONSE_INSTRUCTION])
        targets = self.transfer_targets()
        if targets:
            llm_request.append_instructions([_transfer_instruction(self, targets)])
            tools.append(FunctionTool(transfer_to_agent))
        tool_context = ToolContext(ctx)
        for tool in tools:
            await tool.process_llm_request(tool_context=tool_context, llm_request=llm_request)
        return llm_request

    async def _call_model(
        self,
        ctx: InvocationContext,
        callback_context: CallbackContext,
        llm_request: LlmRequest,
    ) -> AsyncGenerator[LlmResponse, None]:
        override = await dispatch(
            ctx.plugin_manager,
            "before_model_callback",
            self.before_model_callback,
            plugin_kwargs={"callback_context": callback_context, "llm_request": llm_request},
        )
        if override is not None:  # the model call is skipped, and so are the after-model hooks
            yield _checked_response(override)
            return
        stream = ctx.run_config.streaming_mode is StreamingMode.SSE
        record_llm_call(ctx.app_name, llm_request.model or self.canonical_model.model)
        try:
            async for response in self.canonical_model.generate_content_async(
                llm_request, stream=stream
            ):
                if response.partial:
                    yield response
                else:
                    response = await self._after_model(ctx, callback_context, response)
                    yield process_response(
                        self.planner, self.code_executor, callback_context, response
                    )
        except Exception as error:
            replacement = await dispatch(
                ctx.plugin_manager,
                "on_model_error_callback",
                self.on_model_error_callback,
                plugin_kwargs={
                    "callback_context": callback_context,
                    "llm_request": llm_request,
                    "error": error,
                },
            )
            if replacement is None:
                raise
            yield _checked_response(replacement)

    async def _after_model(
        self, ctx: InvocationContext, callback_context: CallbackContext, response: LlmResponse
    ) -> LlmResponse:
        replaced = await dispatch(
            ctx.plugin_manager,
            "after_model_callback",
            self.after_model_callback,
            plugin_kwargs={"callback_context": callback_context, "llm_response": response},
        )
        return _checked_response(replaced if replaced is not None else response)

    def _response_event(
        self,
        ctx: InvocationContext,
        response: LlmResponse,
        actions: EventActions,
        previous: Event | None,
    ) -> Event:
        # The response's set fields as they are (no dump and re-validation: this runs for every
        # streamed chunk); an Event has every field an LlmResponse has.
        fields = {
            name: value
            for name in _RESPONSE_FIELDS
            if (value := getattr(response, name)) is not None
        }
        event = self.make_event(
            ctx,
            content=response.content,
            actions=EventActions() if response.partial else actions,
            **fields,
        )
        if previous is not None:  # chunks and the final answer share one event id, as in ADK
            event.id = previous.id
        calls = event.get_function_calls()
        for call in calls:
            if not call.id:
                call.id = f"adk-{uuid.uuid4()}"
        if calls:
            event.long_running_tool_ids = [
                c.id or ""
                for c in calls
                if isinstance(tool := _tool_named(self, ctx, c.name), BaseTool)
                and tool.is_long_running
            ]
        return event

    def _save_output(self, callback_context: CallbackContext, event: Event) -> None:
        if not self.output_key or not event.is_final_response() or event.content is None:
            return
        if event.author != self.name:
            return
        text = "".join(p.text or "" for p in event.content.parts or [] if not p.thought)
        if not text:
            return
        value: Any = text
        if self.output_schema is not None:  # ADK: the answer is validated, stored as data
            adapter: TypeAdapter[Any] = TypeAdapter(self.output_schema)
            value = adapter.dump_python(adapter.validate_json(text), mode="json", exclude_none=True)
        callback_context.state[self.output_key] = value

    def _structured_event(self, ctx: InvocationContext, answer: str) -> Event:
        """set_model_response's arguments as the agent's final JSON answer."""
        actions = EventActions()
        event = self.make_event(
            ctx,
            content=types.Content(role="model", parts=[types.Part(text=answer)]),
            actions=actions,
        )
        self._save_output(CallbackContext(ctx, event_actions=actions), event)
        return event

    async def _execute_code(self, ctx: InvocationContext, model_event: Event) -> Event | None:
        """Run the answer's code block with the agent's executor; its result as an event."""
        executor = self.code_executor
        if executor is None or isinstance(executor, BuiltInCodeExecutor):
            return None
        parts = model_event.content.parts if model_event.content else None
        code = next((p.executable_code.code for p in parts or [] if p.executable_code), None)
        if code is None or model_event.partial:
            return None
        result = await executor.execute_code(
            ctx, CodeExecutionInput(code=code, execution_id=ctx.invocation_id)
        )
        return self.make_event(
            ctx, content=types.Content(role="model", parts=[result_part(result)])
        )

    # -- tools ----------------------------------------------------------------------------


def _checked_response(value: Any) -> LlmResponse:
    if not isinstance(value, LlmResponse):
        raise TypeError(f"A model callback must return LlmResponse or None, not {type(value)}")
    return value


class _StepOutcome:
    """Whether the loop should stop after the current step."""

    def __init__(self) -> None:
        self.done = False


def _tool_named(agent: LlmAgent, ctx: InvocationContext, name: str | None) -> BaseTool | None:
    return next((t for t in agent.tools_known(ctx) if t.name == name), None)


async def _resolve_instruction(
    instruction: str | InstructionProvider, context: ReadonlyContext
) -> str:
    if isinstance(instruction, str):
        return await inject_session_state(instruction, context)
    result = instruction(context)
    if inspect.isawaitable(result):
        result = await result
    return str(result)


#: What an event copies from the model response it records (all but its content, given apart).
_RESPONSE_FIELDS = tuple(name for name in LlmResponse.model_fields if name != "content")

_SET_MODEL_RESPONSE_INSTRUCTION = (
    "After completing any needed tool calls, provide your final response by calling "
    "set_model_response with the required fields."
)


def _transfer_instruction(agent: LlmAgent, targets: list[BaseAgent]) -> str:
    lines = [
        f'You are an agent. Your internal name is "{agent.name}".',
        "You have a list of other agents to transfer to:",
        *(f"Agent name: {t.name}\nAgent description: {t.description}" for t in targets),
        "If another agent is better for answering the question according to its description, "
        "call `transfer_to_agent` function to transfer the question to that agent.",
    ]
    return "\n\n".join(lines)


Agent = LlmAgent
