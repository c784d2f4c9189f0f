"""ADK import path: `from app.apps.llm_event_summarizer import LlmEventSummarizer`."""

from app.invocations.summarizer import LlmEventSummarizer

__all__ = ["LlmEventSummarizer"]
