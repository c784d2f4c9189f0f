"""ADK import path: `from app.models.base_llm import BaseLlm`."""

from app.models.llm import BaseLlm

__all__ = ["BaseLlm"]
