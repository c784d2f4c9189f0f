"""The guide's before_tool_callback example: Canada becomes France; "BLOCK" skips the tool."""

from typing import Any

from app.agents import LlmAgent
from app.tools import FunctionTool
from app.tools.base_tool import BaseTool
from app.tools.tool_context import ToolContext


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country."""
    country_capitals = {
        "united states": "Washington, D.C.",
        "canada": "Ottawa",
        "france": "Paris",
        "germany": "Berlin",
    }
    return country_capitals.get(country.lower(), f"Capital not found for {country}")


def simple_before_tool_modifier(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
) -> dict[str, Any] | None:
    """Inspects/modifies tool args or skips the tool call."""
    del tool_context
    if tool.name == "get_capital_city" and args.get("country", "").lower() == "canada":
        args["country"] = "France"
        return None
    if tool.name == "get_capital_city" and args.get("country", "").upper() == "BLOCK":
        return {"result": "Tool execution was blocked by before_tool_callback."}
    return None


root_agent = LlmAgent(
    name="ToolCallbackAgent",
    model="scripted",
    instruction="You are an agent that can find capital cities. Use the get_capital_city tool.",
    description="An LLM agent demonstrating before_tool_callback",
    tools=[FunctionTool(func=get_capital_city)],
    before_tool_callback=simple_before_tool_modifier,
)
