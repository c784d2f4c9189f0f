"""ADK import path: `from app.apps.app import App, EventsCompactionConfig, ResumabilityConfig`."""

from app.invocations.app_config import App, EventsCompactionConfig, ResumabilityConfig

__all__ = ["App", "EventsCompactionConfig", "ResumabilityConfig"]
