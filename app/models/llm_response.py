"""ADK import path: `from app.models.llm_response import LlmResponse`."""

from app.models.llm import LlmResponse

__all__ = ["LlmResponse"]
