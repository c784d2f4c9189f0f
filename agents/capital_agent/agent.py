"""capital_agent: answers "What is the capital of X?" offline, like the recorded ADK fixtures.

The scripted model calls `get_capital_city`, then answers "The capital of X is Y."; the
after-tool callback saves a `notes.txt` artifact (a new version per turn) and records
`last_country` and the per-user counter `user:visits` in state.
"""

from typing import Any

from google.genai import types

from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools.base_tool import BaseTool
from app.tools.tool_context import ToolContext

CAPITALS = {
    "united states": "Washington, D.C.",
    "canada": "Ottawa",
    "france": "Paris",
    "germany": "Berlin",
    "italy": "Rome",
    "japan": "Tokyo",
    "spain": "Madrid",
}


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country.

    Args:
        country: the country's name, e.g. "France".
    """
    return CAPITALS.get(country.lower(), f"Capital not found for {country}")


async def remember_country(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: dict[str, Any]
) -> dict[str, Any] | None:
    """Save a note artifact and count the user's visits."""
    if tool.name != "get_capital_city":
        return None
    country = str(args.get("country", ""))
    note = f"{country}: {tool_response.get('result')}"
    await tool_context.save_artifact("notes.txt", types.Part(text=note))
    tool_context.state["last_country"] = country
    tool_context.state["user:visits"] = int(tool_context.state.get("user:visits", 0)) + 1
    return None


root_agent = LlmAgent(
    name="capital_agent",
    model=ScriptedLlm(
        model="scripted-capital",
        rules=[
            Rule(
                when_user=r"capital of (?P<country>[^?.!]+)",
                call=("get_capital_city", {"country": "{country}"}),
            ),
            Rule(when_tool="get_capital_city", say="The capital of {country} is {result}."),
        ],
    ),
    description="Answers questions about capital cities.",
    instruction="You answer questions about capital cities. Use the get_capital_city tool.",
    tools=[get_capital_city],
    after_tool_callback=remember_country,
)
