"""ADK import path: `from app.agents.invocation_context import InvocationContext`."""

from app.contexts.invocation import InvocationContext, LlmCallsLimitExceededError

__all__ = ["InvocationContext", "LlmCallsLimitExceededError"]
