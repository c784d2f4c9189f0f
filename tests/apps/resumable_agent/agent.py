"""A test app for resuming invocations: its tools fail or wait until the test lets them through.

The user's message picks what the model does: "flaky" calls `flaky`, which raises `ToolBroke`
until the test creates `<AGENTD_TEST_GATES>/<session id>.fixed`; "hold" calls `hold`, which
waits until `<session id>.open` exists (so a test can cancel the invocation mid-tool); anything
else is answered `you said: <text>`. A tool's result is answered `<tool>: <result>`. A call
answered with an error (the invocation failed or was cancelled there, and is now resumed) is made
again, as a model that reads the error and retries would.
"""

import asyncio
import os
import time
from collections.abc import AsyncGenerator
from pathlib import Path

from google.genai import types

from app.agents import LlmAgent
from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import Rule, ScriptedLlm
from app.tools.tool_context import ToolContext

BROKE_MESSAGE = "the tool broke on purpose"
FIXED = "fixed"
RELEASED = "released"
HOLD_SECONDS = 120


class ToolBroke(RuntimeError):
    """What `flaky` raises until it is fixed."""


def _gate(tool_context: ToolContext, suffix: str) -> Path:
    return Path(os.environ["AGENTD_TEST_GATES"]) / f"{tool_context.session_id}.{suffix}"


async def flaky(tool_context: ToolContext) -> str:
    """Raises ToolBroke until the session's `.fixed` gate exists."""
    if not _gate(tool_context, "fixed").exists():
        raise ToolBroke(BROKE_MESSAGE)
    return FIXED


async def hold(tool_context: ToolContext) -> str:
    """Waits until the session's `.open` gate exists."""
    gate = _gate(tool_context, "open")
    deadline = time.monotonic() + HOLD_SECONDS
    while not gate.exists():
        if time.monotonic() > deadline:
            return "timed out"
        await asyncio.sleep(0.02)
    return RELEASED


class RetryingLlm(ScriptedLlm):
    """ScriptedLlm that calls a tool again when its last answer was an error."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """The failed call again after an error response; the scripted rules otherwise."""
        last = llm_request.contents[-1] if llm_request.contents else None
        failed = [
            part.function_response.name
            for part in (last.parts or [] if last is not None else [])
            if part.function_response is not None
            and "error" in (part.function_response.response or {})
        ]
        if failed:
            call = types.FunctionCall(name=failed[0], args={})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                partial=False,
                turn_complete=True,
            )
            return
        async for response in super().generate_content_async(llm_request, stream):
            yield response


root_agent = LlmAgent(
    name="resumable_agent",
    model=RetryingLlm(
        rules=[
            Rule(when_user="^flaky$", call=("flaky", {})),
            Rule(when_user="^hold$", call=("hold", {})),
            Rule(when_user=".", say="you said: {text}"),
            Rule(when_tool="flaky", say="flaky: {result}"),
            Rule(when_tool="hold", say="hold: {result}"),
        ]
    ),
    tools=[flaky, hold],
)
