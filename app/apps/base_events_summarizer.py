"""ADK import path: `from app.apps.base_events_summarizer import BaseEventsSummarizer`."""

from app.invocations.summarizer import BaseEventsSummarizer

__all__ = ["BaseEventsSummarizer"]
