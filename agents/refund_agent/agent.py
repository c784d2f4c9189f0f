"""refund_agent: refunds above a threshold need a person's confirmation (offline, scripted).

"refund 150 for order A1" makes the model call `refund`; above `THRESHOLD` the call waits for a
confirmation (the invocation takes status `requires_action`), below it the refund runs at once.
A confirmed call runs exactly once; a denied one never runs, and the model is told so.
"""

from typing import Any

from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools import FunctionTool
from app.tools.tool_context import ToolContext

THRESHOLD = 100.0


def needs_approval(amount: Any, **_: Any) -> bool:
    """Refunds above the threshold need a person's confirmation."""
    return float(amount) > THRESHOLD


def refund(order_id: str, amount: float, tool_context: ToolContext) -> dict[str, Any]:
    """Refunds `amount` for an order.

    Args:
        order_id: the order to refund.
        amount: how much to refund.
    """
    done = list(tool_context.state.get("refunds", []))
    done.append({"order": order_id, "amount": float(amount)})
    tool_context.state["refunds"] = done
    return {"status": "refunded", "order": order_id, "amount": float(amount)}


model = ScriptedLlm(
    rules=[
        Rule(
            when_user=r"refund (?P<amount>\d+(?:\.\d+)?) for order (?P<order>\w+)",
            call=("refund", {"order_id": "{order}", "amount": "{amount}"}),
        )
    ]
)

root_agent = LlmAgent(
    name="refund_agent",
    model=model,
    description="Refunds orders; large refunds wait for a person's approval.",
    instruction="You refund orders with the refund tool.",
    tools=[FunctionTool(refund, require_confirmation=needs_approval)],
)
