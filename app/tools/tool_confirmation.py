"""ADK import path: `from app.tools.tool_confirmation import ToolConfirmation`."""

from app.sessions.tool_confirmation import ToolConfirmation

__all__ = ["ToolConfirmation"]
