"""ADK import path: `from app.agents.readonly_context import ReadonlyContext`."""

from app.contexts.readonly import ReadonlyContext

__all__ = ["ReadonlyContext"]
