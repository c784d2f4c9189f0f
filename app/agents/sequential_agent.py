"""ADK import path: `from app.agents.sequential_agent import SequentialAgent`."""

from app.agents.workflow import SequentialAgent

__all__ = ["SequentialAgent"]
