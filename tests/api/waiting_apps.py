"""The apps and helpers the HTTP tests of invocations waiting in `requires_action` share
(`test_requires_action_http`, `test_cancel_waiting_http`): an agents folder with the shipped
`refund_agent` (refunds above 100 wait for a confirmation), `two_refunds` and any more apps a
module writes; a new session; the invocations path of a session; a confirmation sent ADK's way.
"""

import shutil
import textwrap
import uuid
from pathlib import Path
from typing import Any

import httpx

PROJECT = Path(__file__).resolve().parents[2]
USER = "u1"

#: An app whose model asks for two large refunds at once (each waits for a confirmation), then
#: reports every result it got back.
TWO_REFUNDS = '''
from collections.abc import AsyncGenerator

from google.genai import types

from app.agents import LlmAgent
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.tools import FunctionTool
from app.tools.tool_context import ToolContext


class TwoRefunds(BaseLlm):
    """Asks for two large refunds at once, then reports every result it got back."""

    model: str = "two-refunds"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        results = [p.function_response for p in last.parts or [] if p.function_response]
        if results:
            text = "; ".join(f"{r.name}:{sorted(r.response.items())}" for r in results)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        calls = [
            types.Part(function_call=types.FunctionCall(
                id=f"call-{order}", name="refund", args={"order_id": order, "amount": 500}
            ))
            for order in ("A", "B")
        ]
        yield LlmResponse(content=types.Content(role="model", parts=calls))


def refund(order_id: str, amount: float, tool_context: ToolContext) -> dict:
    """Refunds an order."""
    tool_context.state["refunded_" + order_id] = True
    return {"status": "refunded", "order": order_id}


root_agent = LlmAgent(
    name="two_refunds",
    model=TwoRefunds(),
    tools=[FunctionTool(refund, require_confirmation=True)],
)
'''


def refund_agents(root: Path, **sources: str) -> Path:
    """`root/agents` with `refund_agent`, `two_refunds` and an app per `sources` (name: the
    source of its `agent.py`)."""
    agents = root / "agents"
    shutil.copytree(PROJECT / "agents" / "refund_agent", agents / "refund_agent")
    for name, source in {"two_refunds": TWO_REFUNDS, **sources}.items():
        (agents / name).mkdir(parents=True)
        (agents / name / "agent.py").write_text(textwrap.dedent(source))
    return agents


def new_session(http: httpx.Client, app: str) -> str:
    """A new session of `USER` in `app`: its id."""
    sid = f"s-{uuid.uuid4().hex[:12]}"
    created = http.post(f"/apps/{app}/users/{USER}/sessions", json={"sessionId": sid})
    assert created.status_code == 201, created.text
    return sid


def invocations(app: str, sid: str) -> str:
    """The path of session `sid`'s invocations."""
    return f"/apps/{app}/users/{USER}/sessions/{sid}/invocations"


def confirmation(request_call_id: str) -> dict[str, Any]:
    """The user message that confirms, ADK's way, the request `request_call_id` (the
    `requestCallId` of a call in `requiredAction`)."""
    return {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": request_call_id,
                    "name": "adk_request_confirmation",
                    "response": {"confirmed": True},
                }
            }
        ],
    }
