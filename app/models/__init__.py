"""LLM backends: the BaseLlm port, requests and responses, Gemini and the offline scripted model."""

from app.models.llm import BaseLlm, LLMRegistry, LlmRequest, LlmResponse

__all__ = ["BaseLlm", "LLMRegistry", "LlmRequest", "LlmResponse"]
