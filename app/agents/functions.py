"""Running one model response's function calls: concurrently, each with its own ToolContext.

Each call goes through the before-tool hooks (plugins, then the agent's callbacks; a dict skips the
tool), the tool itself (errors go to the on-tool-error hooks), result wrapping (`{"result": v}`
for non-dicts) and the after-tool hooks. The calls' results become one function-response event
whose actions merge every call's deltas key by key, so parallel writers never lose a write.

A call run again after the person answered its confirmation request gets the answer as
`tool_context.tool_confirmation`; a denied call never reaches its tool (nor its callbacks): it is
answered with ADK's rejection, whatever the tool would have done with the answer.
"""

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from google.genai import types

from app.agents.callbacks import dispatch
from app.contexts.invocation import InvocationContext
from app.contexts.tool import ToolContext
from app.errors import ToolCallFailed
from app.observability.metrics import record_tool_call
from app.sessions.models import Event, EventActions
from app.sessions.tool_confirmation import ToolConfirmation
from app.tools.base_tool import BaseTool
from app.tools.function_tool import CONFIRMATION_REJECTED

if TYPE_CHECKING:
    from app.agents.llm_agent import LlmAgent


async def run_function_calls(
    agent: "LlmAgent",
    ctx: InvocationContext,
    calls: list[types.FunctionCall],
    tools: dict[str, Any],
    confirmations: Mapping[str, ToolConfirmation] | None = None,
) -> Event | None:
    """The function-response event of `calls` (None if only long-running tools answered).

    `confirmations` are the person's answers by call id, for calls run again after asking.
    """
    answers = confirmations or {}
    contexts = [
        ToolContext(
            ctx,
            function_call_id=call.id,
            event_actions=EventActions(),
            tool_confirmation=answers.get(call.id or ""),
        )
        for call in calls
    ]
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(_run_tool(agent, ctx, call, tools.get(call.name or ""), tc))
                for call, tc in zip(calls, contexts, strict=True)
            ]
    except BaseExceptionGroup as failures:
        # One failed call fails the step (the others are cancelled); report that call's error.
        raise failures.exceptions[0] from None
    parts = [t.result() for t in tasks]
    response_parts = [p for p in parts if p is not None]
    if not response_parts:
        return None
    return agent.make_event(
        ctx,
        content=types.Content(role="user", parts=response_parts),
        actions=_merge_actions([tc.actions for tc in contexts]),
    )


async def _run_tool(
    agent: "LlmAgent",
    ctx: InvocationContext,
    call: types.FunctionCall,
    tool: BaseTool | None,
    tool_context: ToolContext,
) -> types.Part | None:
    args = dict(call.args or {})
    confirmation = tool_context.tool_confirmation
    if confirmation is not None and not confirmation.confirmed:
        result: Any = dict(CONFIRMATION_REJECTED)  # denied: the tool never runs
    elif tool is None:
        result = {"error": f"Tool {call.name!r} is not available to this agent."}
    else:
        result = await _execute_tool(agent, ctx, tool, args, tool_context)
        if result is None and tool.is_long_running:
            return None
    response = result if isinstance(result, dict) else {"result": result}
    return types.Part(
        function_response=types.FunctionResponse(id=call.id, name=call.name, response=response)
    )


async def _execute_tool(
    agent: "LlmAgent",
    ctx: InvocationContext,
    tool: BaseTool,
    args: dict[str, Any],
    tool_context: ToolContext,
) -> Any:
    # Plugins get the arguments as `tool_args`, agent callbacks as `args` (ADK's names).
    plugin_kwargs: dict[str, Any] = {"tool": tool, "tool_args": args, "tool_context": tool_context}
    callback_kwargs: dict[str, Any] = {"tool": tool, "args": args, "tool_context": tool_context}
    result = await dispatch(
        ctx.plugin_manager,
        "before_tool_callback",
        agent.before_tool_callback,
        plugin_kwargs=plugin_kwargs,
        callback_kwargs=callback_kwargs,
    )
    if result is None:
        try:
            result = await tool.run_async(args=args, tool_context=tool_context)
        except Exception as error:
            record_tool_call(ctx.app_name, tool.name, "error")
            result = await dispatch(
                ctx.plugin_manager,
                "on_tool_error_callback",
                agent.on_tool_error_callback,
                plugin_kwargs={**plugin_kwargs, "error": error},
                callback_kwargs={**callback_kwargs, "error": error},
            )
            if result is None:
                if not isinstance(error, ToolCallFailed):
                    raise
                result = {"error": error.marshal()}  # the model is told; the invocation goes on
        else:
            record_tool_call(ctx.app_name, tool.name, "ok")
        if result is None and tool.is_long_running:
            return None
        if not isinstance(result, dict):
            result = {"result": result}
    replaced = await dispatch(
        ctx.plugin_manager,
        "after_tool_callback",
        agent.after_tool_callback,
        plugin_kwargs={**plugin_kwargs, "result": result},
        callback_kwargs={**callback_kwargs, "tool_response": result},
    )
    return replaced if replaced is not None else result


def _merge_actions(all_actions: list[EventActions]) -> EventActions:
    """One EventActions for parallel calls: deltas merged key by key, flags or-ed."""
    merged = EventActions()
    for actions in all_actions:
        merged.state_delta.update(actions.state_delta)
        merged.artifact_delta.update(actions.artifact_delta)
        merged.requested_auth_configs.update(actions.requested_auth_configs)
        merged.requested_tool_confirmations.update(actions.requested_tool_confirmations)
        if actions.skip_summarization:
            merged.skip_summarization = True
        if actions.escalate:
            merged.escalate = True
        if actions.transfer_to_agent:
            merged.transfer_to_agent = actions.transfer_to_agent
    return merged
