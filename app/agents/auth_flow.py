"""Tool credentials in the agent loop: ADK's `adk_request_credential` round trip.

Asking: a tool calls `tool_context.request_credential(auth_config)`, which records the config in
its function-response event's `requested_auth_configs`. After that event the agent yields one
more (`request_client_input`, with the step's other requests): one `adk_request_credential`
function call per requested config, `args = {"functionCallId": <the tool's call id>,
"authConfig": <the config>}` (ADK's AuthToolArguments dumped by alias), each with a fresh `adk-`
id listed in `long_running_tool_ids`, and the invocation ends there, waiting for the client.
(ADK yields this event just before the function-response event; agentd yields it just after, so
the invocation's last event is the one that says what it waits for.)

Answering: the client sends a user message with a function response named
`adk_request_credential`, the call's id, and the AuthConfig with `exchangedAuthCredential`
filled in. When an LlmAgent starts and that is the latest message (`resume_authorized_tools`, ADK's
auth preprocessor), each credential is kept in temp state under its credential key, the calls
that asked are found in the session and run again through the normal tool path (callbacks and
plugins apply; the other calls of that step are not re-run), and their function-response event
is yielded before the model is called. The model never sees the `adk_request_credential` calls
or their answers (`app.sessions.client_calls.is_auth_event`, used by `contents.py`).
"""

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from app.agents.confirmation_flow import end_of_step
from app.agents.functions import run_function_calls
from app.auth.auth_handler import AuthHandler
from app.auth.auth_tool import AuthConfig, AuthToolArguments
from app.contexts.invocation import InvocationContext
from app.sessions.client_calls import REQUEST_EUC_FUNCTION_CALL_NAME, passed_up
from app.sessions.models import Event

if TYPE_CHECKING:
    from app.agents.llm_agent import LlmAgent


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
        # The tool may ask again, for a credential or a confirmation (one waiting event).
        for event in end_of_step(agent, ctx, calls, response_event).events:
            yield event
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
