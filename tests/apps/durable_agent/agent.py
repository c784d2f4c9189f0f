"""A test app for durable runs: every model call and tool execution is logged, so a test can
count what ran twice after a process died.

"go": the model calls `prepare`, then `slow_step` (which waits until the test creates
`<AGENTD_TEST_GATES>/<session id>.open`), then answers `finished: <result>`. "nap": the model
calls `nap` twice (each sleeps NAP_SECONDS) and answers `napped`. Each model call and tool
execution appends one JSON line to `<AGENTD_TEST_GATES>/<session id>.log`: what ran, the
process id, and for tools the call's `idempotency_key`.
"""

import asyncio
import json
import os
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from app.agents import LlmAgent
from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import Rule, ScriptedLlm
from app.tools.tool_context import ToolContext

GATE_SECONDS = 120
NAP_SECONDS = 0.4


def _log(session_id: str, **entry: Any) -> None:
    path = Path(os.environ["AGENTD_TEST_GATES"]) / f"{session_id}.log"
    with path.open("a") as log:
        log.write(json.dumps({**entry, "pid": os.getpid(), "time": time.time()}) + "\n")


def _log_tool(tool_context: ToolContext, name: str) -> None:
    _log(tool_context.session_id, what="tool", name=name, key=tool_context.idempotency_key)


async def prepare(tool_context: ToolContext) -> str:
    """Prepares the work."""
    _log_tool(tool_context, "prepare")
    return "prepared"


async def slow_step(tool_context: ToolContext) -> str:
    """Waits until the session's gate is open."""
    _log_tool(tool_context, "slow_step")
    gate = Path(os.environ["AGENTD_TEST_GATES"]) / f"{tool_context.session_id}.open"
    deadline = time.monotonic() + GATE_SECONDS
    while not gate.exists():
        if time.monotonic() > deadline:
            return "timed out"
        await asyncio.sleep(0.02)
    return "slow done"


async def nap(tool_context: ToolContext) -> str:
    """Sleeps a little."""
    _log_tool(tool_context, "nap")
    await asyncio.sleep(NAP_SECONDS)
    return "rested"


class LoggedLlm(ScriptedLlm):
    """ScriptedLlm that logs each call; `nap` is called twice before it answers."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Log the call (under the session named in the request's labels), then answer."""
        labels = (llm_request.config.labels if llm_request.config else None) or {}
        session_id = labels.get("session", "")
        naps = sum(
            1
            for content in llm_request.contents
            for part in content.parts or []
            if part.function_response is not None and part.function_response.name == "nap"
        )
        _log(session_id, what="model", naps=naps)
        if naps == 1:  # the second nap
            async for response in ScriptedLlm(
                rules=[Rule(when_tool="nap", call=("nap", {}))]
            ).generate_content_async(llm_request, stream):
                yield response
            return
        async for response in super().generate_content_async(llm_request, stream):
            yield response


def _label_session(callback_context: Any, llm_request: LlmRequest) -> None:
    """Tell the model which session it serves (for its log)."""
    if llm_request.config is not None:
        llm_request.config.labels = {"session": callback_context.session.id}


root_agent = LlmAgent(
    name="durable_agent",
    model=LoggedLlm(
        rules=[
            Rule(when_user="^go$", call=("prepare", {})),
            Rule(when_tool="prepare", call=("slow_step", {})),
            Rule(when_tool="slow_step", say="finished: {result}"),
            Rule(when_user="^nap$", call=("nap", {})),
            Rule(when_tool="nap", say="napped"),
        ]
    ),
    tools=[prepare, slow_step, nap],
    before_model_callback=_label_session,
)
