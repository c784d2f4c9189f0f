"""LLM backends: the BaseLlm port and its messages, the registry, Gemini, the scripted model."""

from app.models.gemini import Gemini
from app.models.llm import BaseLlm, LlmCapabilities, LlmRequest, LlmResponse
from app.models.registry import LLMRegistry

__all__ = ["BaseLlm", "Gemini", "LLMRegistry", "LlmCapabilities", "LlmRequest", "LlmResponse"]
