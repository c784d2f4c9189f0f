"""ADK import path: `from app.utils.instructions_utils import inject_session_state`."""

from app.agents.instructions import inject_session_state

__all__ = ["inject_session_state"]
