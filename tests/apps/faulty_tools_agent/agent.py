"""A test app whose tools fail or hang, for the tests of calls left open by a failed invocation.

The user's message picks what the model does: "raise" calls `explode`, which raises `ToolBroke`;
"wait" calls `linger`, which sleeps until the invocation is cancelled, times out or its server
dies; "both" makes one model response with two calls, `linger` and `explode`; anything else is
answered with text and no call.
"""

import asyncio
from collections.abc import AsyncGenerator

from google.genai import types

from app.agents import LlmAgent
from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import Rule, ScriptedLlm

BROKE_MESSAGE = "the tool broke on purpose"
LINGER_SECONDS = 300
REPLY = "all quiet"


class ToolBroke(RuntimeError):
    """What `explode` raises."""


async def explode() -> str:
    """Raises ToolBroke."""
    raise ToolBroke(BROKE_MESSAGE)


async def linger() -> str:
    """Sleeps for longer than any test waits."""
    await asyncio.sleep(LINGER_SECONDS)
    return "woke up"


class TwoCallsLlm(ScriptedLlm):
    """ScriptedLlm that answers "both" with a single response holding two function calls."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Two calls for "both"; the scripted rules otherwise."""
        last = llm_request.contents[-1] if llm_request.contents else None
        if (
            last is not None
            and last.role == "user"
            and [p.text for p in last.parts or []] == ["both"]
        ):
            calls = [types.FunctionCall(name=name, args={}) for name in ("linger", "explode")]
            yield LlmResponse(
                content=types.Content(
                    role="model", parts=[types.Part(function_call=call) for call in calls]
                ),
                partial=False,
                turn_complete=True,
            )
            return
        async for response in super().generate_content_async(llm_request, stream):
            yield response


root_agent = LlmAgent(
    name="faulty_tools_agent",
    model=TwoCallsLlm(
        rules=[
            Rule(when_user="^raise$", call=("explode", {})),
            Rule(when_user="^wait$", call=("linger", {})),
            Rule(when_user=".", say=REPLY),
        ]
    ),
    tools=[explode, linger],
)
