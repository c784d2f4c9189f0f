"""ADK import path: `from app.models.llm_request import LlmRequest`."""

from app.models.llm import LlmRequest

__all__ = ["LlmRequest"]
