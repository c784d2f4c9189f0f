"""ADK import path: `from app.tools.transfer_to_agent_tool import transfer_to_agent`."""

from app.tools.builtin import transfer_to_agent

__all__ = ["transfer_to_agent"]
