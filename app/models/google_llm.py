"""ADK import path: `from app.models.google_llm import Gemini`."""

from app.models.gemini import Gemini

__all__ = ["Gemini"]
