"""ADK import path: `from app.tools.exit_loop_tool import exit_loop`."""

from app.tools.builtin import exit_loop

__all__ = ["exit_loop"]
