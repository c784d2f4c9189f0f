"""ADK import path: `from app.tools.tool_context import ToolContext`."""

from app.contexts.tool import ToolContext

__all__ = ["ToolContext"]
