"""LLM backends: the BaseLlm port and its messages, the registry, Gemini, the scripted model."""

from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.models.registry import LLMRegistry

__all__ = ["BaseLlm", "LLMRegistry", "LlmRequest", "LlmResponse"]
