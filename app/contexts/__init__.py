"""The context objects of one invocation: what agents, callbacks and tools can see and change."""

from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext, LlmCallsLimitExceededError, RunConfig
from app.contexts.readonly import ReadonlyContext
from app.contexts.tool import ToolContext

__all__ = [
    "CallbackContext",
    "InvocationContext",
    "LlmCallsLimitExceededError",
    "ReadonlyContext",
    "RunConfig",
    "ToolContext",
]
