# Source: ADK docs, "Plugins" > "Plugin callback hooks" > "Tool callbacks": "before_tool_callback
#   ... If it returns a dictionary, the tool's execution is skipped and the dictionary is used as
#   the tool's result", https://google.github.io/adk-docs/plugins/
# The page describes this plugin in words only; this is the smallest ADK code that does what it
# says (written against google.adk, then imports renamed `google.adk` -> `app`).
from typing import Any, Optional

from app.agents import LlmAgent
from app.apps import App
from app.plugins import BasePlugin
from app.runners import InMemoryRunner
from app.tools import BaseTool, ToolContext

deleted: list[str] = []


def delete_records(table: str) -> dict:
    """Deletes every record of a table."""
    deleted.append(table)
    return {"status": "deleted", "table": table}


class ToolGuardPlugin(BasePlugin):
    """Blocks destructive tools everywhere in the app."""

    def __init__(self) -> None:
        super().__init__(name="tool_guard")
        self.blocked = 0

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> Optional[dict]:
        if tool.name.startswith("delete_"):
            self.blocked += 1
            return {"error": f"{tool.name} is not allowed."}
        return None


root_agent = LlmAgent(
    name="records_agent",
    model="gemini-2.0-flash",
    instruction="Manage records with your tools.",
    tools=[delete_records],
)
guard = ToolGuardPlugin()
app = App(name="records_app", root_agent=root_agent, plugins=[guard])
runner = InMemoryRunner(app=app)
