"""Tool credentials in the agent loop: ADK's `adk_request_credential` round trip.

Asking: a tool calls `tool_context.request_credential(auth_config)`, which records the config in
its function-response event's `requested_auth_configs`. After that event the agent yields one
more (`request_credentials`): one `adk_request_credential` function call per requested config,
`args = {"functionCallId": <the tool's call id>, "authConfig": <the config>}` (ADK's
AuthToolArguments dumped by alias), each with a fresh `adk-` id listed in
`long_running_tool_ids`, and the invocation ends there, waiting for the client. (ADK yields this
event just before the function-response event; agentd yields it just after, so the invocation's
last event is the one that says what it waits for.)

Answering: the client sends a user message with a function response named
`adk_request_credential`, the call's id, and the AuthConfig with `exchangedAuthCredential`
filled in. When an LlmAgent starts and that is the latest message (`resume_authorized_tools`, ADK's
auth preprocessor), each credential is kept in temp state under its credential key, the calls
that asked are found in the session and run again through the normal tool path (callbacks and
plugins apply; the other calls of that step are not re-run), and their function-response event
is yielded before the model is called. The model never sees the `adk_request_credential` calls
or their answers (`is_auth_event`, used by `contents.py`).
"""

import uuid
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from google.genai import types

from app.agents.functions import run_function_calls
from app.auth.auth_credential import wire
from app.auth.auth_handler import AuthHandler
from app.auth.auth_tool import AuthConfig, AuthToolArguments
from app.contexts.invocation import InvocationContext
from app.sessions.models import Event

if TYPE_CHECKING:
    from app.agents.llm_agent import LlmAgent

#: The name of the function call that asks the client for a credential (ADK's name).
REQUEST_EUC_FUNCTION_CALL_NAME = "adk_request_credential"


def is_auth_event(event: Event) -> bool:
    """Whether the event holds an `adk_request_credential` call or its answer."""
    for part in event.content.parts or () if event.content else ():
        if part.function_call and part.function_call.name == REQUEST_EUC_FUNCTION_CALL_NAME:
            return True
        if part.function_response and part.function_response.name == REQUEST_EUC_FUNCTION_CALL_NAME:
            return True
    return False


def credential_request_parts(response_event: Event) -> list[types.Part]:
    """One `adk_request_credential` call (fresh `adk-` id) per config `response_event`
    requested."""
    requested: dict[str, Any] = response_event.actions.requested_auth_configs
    parts = []
    for function_call_id, auth_config in requested.items():
        args = AuthToolArguments(
            function_call_id=function_call_id, auth_config=AuthConfig.model_validate(auth_config)
        )
        parts.append(
            types.Part(
                function_call=types.FunctionCall(
                    id=f"adk-{uuid.uuid4()}", name=REQUEST_EUC_FUNCTION_CALL_NAME, args=wire(args)
                )
            )
        )
    return parts


def request_credentials(
    agent: "LlmAgent", ctx: InvocationContext, response_event: Event
) -> Event | None:
    """The `adk_request_credential` event for the configs `response_event` requested (None if
    it requested none); the invocation then ends, waiting for the client's answer."""
    parts = credential_request_parts(response_event)
    if not parts:
        return None
    ids = [p.function_call.id or "" for p in parts if p.function_call]
    role = response_event.content.role if response_event.content else None
    ctx.pause()
    return agent.make_event(
        ctx, content=types.Content(role=role, parts=parts), long_running_tool_ids=ids
    )


async def resume_authorized_tools(
    agent: "LlmAgent", ctx: InvocationContext
) -> AsyncGenerator[Event, None]:
    """If the latest message answers `adk_request_credential` calls: keep the credentials, run
    the calls that asked for them again and yield their function-response event (and, should
    they ask again, the next request, ending the invocation)."""
    events = ctx.session.events
    latest = next((e for e in reversed(events) if e.content is not None), None)
    if latest is None or latest.author != "user":
        return
    answered: set[str] = set()
    for response in latest.get_function_responses():
        if response.name != REQUEST_EUC_FUNCTION_CALL_NAME or not response.id:
            continue
        answered.add(response.id)
        config = AuthConfig.model_validate(response.response or {})
        AuthHandler(config).parse_and_store_auth_response(ctx.session.state)
    if not answered:
        return
    from app.agents.agent_tool_flow import passed_up  # it imports this module

    # A request an AgentTool passed up is answered to its wrapped agent (agent_tool_flow).
    own = [e for e in events if not passed_up(e)]
    to_resume = _calls_that_asked(own, answered)
    if not to_resume:
        return
    for event in reversed(own):
        calls = [c for c in event.get_function_calls() if c.id in to_resume]
        if not calls:
            continue
        tools = {tool.name: tool for tool in await agent.tools_in(ctx)}
        response_event = await run_function_calls(agent, ctx, calls, tools)
        if response_event is None:
            return
        yield response_event
        # The tool may ask again, for a credential or a confirmation (one waiting event).
        from app.agents.confirmation_flow import request_client_input  # it imports this module

        follow_up = request_client_input(agent, ctx, calls, response_event)
        if follow_up is not None:
            yield follow_up
        return


def _calls_that_asked(events: list[Event], answered: set[str]) -> set[str]:
    """The ids of the tool calls whose `adk_request_credential` calls `answered` names."""
    for event in reversed(events):
        asked = {
            AuthToolArguments.model_validate(call.args or {}).function_call_id
            for call in event.get_function_calls()
            if call.id in answered and call.name == REQUEST_EUC_FUNCTION_CALL_NAME
        }
        if asked:
            return asked
    return set()
