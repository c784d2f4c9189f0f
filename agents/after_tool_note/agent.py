"""The guide's after_tool_callback example: Washington, D.C. gets a note added to the result."""

from copy import deepcopy
from typing import Any

from app.agents import LlmAgent
from app.tools import FunctionTool
from app.tools.base_tool import BaseTool
from app.tools.tool_context import ToolContext


def get_capital_city(country: str) -> dict[str, str]:
    """Retrieves the capital city of a given country."""
    country_capitals = {
        "united states": "Washington, D.C.",
        "canada": "Ottawa",
        "france": "Paris",
        "germany": "Berlin",
    }
    return {"result": country_capitals.get(country.lower(), f"Capital not found for {country}")}


def simple_after_tool_modifier(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: dict[str, Any]
) -> dict[str, Any] | None:
    """Inspects/modifies the tool result after execution."""
    del args, tool_context
    original = tool_response.get("result", "")
    if tool.name == "get_capital_city" and original == "Washington, D.C.":
        modified = deepcopy(tool_response)
        modified["result"] = f"{original} (Note: This is the capital of the USA)."
        modified["note_added_by_callback"] = True
        return modified
    return None


root_agent = LlmAgent(
    name="AfterToolCallbackAgent",
    model="scripted",
    instruction="You are an agent that finds capital cities using the get_capital_city tool.",
    description="An LLM agent demonstrating after_tool_callback",
    tools=[FunctionTool(func=get_capital_city)],
    after_tool_callback=simple_after_tool_modifier,
)
