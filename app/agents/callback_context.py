"""ADK import path: `from app.agents.callback_context import CallbackContext`."""

from app.contexts.callback import CallbackContext

__all__ = ["CallbackContext"]
