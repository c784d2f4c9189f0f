"""ADK import path: `from app.agents.run_config import RunConfig, StreamingMode`."""

from app.contexts.invocation import RunConfig, StreamingMode

__all__ = ["RunConfig", "StreamingMode"]
