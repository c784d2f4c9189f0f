"""ADK import path: `from app.agents.parallel_agent import ParallelAgent`."""

from app.agents.workflow import ParallelAgent

__all__ = ["ParallelAgent"]
