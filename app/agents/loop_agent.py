"""ADK import path: `from app.agents.loop_agent import LoopAgent`."""

from app.agents.workflow import LoopAgent

__all__ = ["LoopAgent"]
