"""ADK import path: `from app.apps.base_events_summarizer import BaseEventsSummarizer`."""

from app.invocations.summarizer import BaseEventsSummarizer, summary_event

__all__ = ["BaseEventsSummarizer", "summary_event"]
