"""A test app whose tool waits until the test opens a gate (a file named after the session)."""

import asyncio
import os
import time
from pathlib import Path

from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools.tool_context import ToolContext

GATE_SECONDS = 120


async def wait_for_gate(tool_context: ToolContext) -> str:
    """Waits until `<AGENTD_TEST_GATES>/<session id>.open` exists."""
    gate = Path(os.environ["AGENTD_TEST_GATES"]) / f"{tool_context.session_id}.open"
    deadline = time.monotonic() + GATE_SECONDS
    while not gate.exists():
        if time.monotonic() > deadline:
            return "timed out"
        await asyncio.sleep(0.02)
    tool_context.state["gate_passes"] = int(tool_context.state.get("gate_passes", 0)) + 1
    return "opened"


root_agent = LlmAgent(
    name="gated_agent",
    model=ScriptedLlm(
        rules=[
            Rule(when_user=".", call=("wait_for_gate", {})),
            Rule(when_tool="wait_for_gate", say="gate {result}"),
        ]
    ),
    tools=[wait_for_gate],
)
