"""ADK import path: `from app.apps import App, ResumabilityConfig`."""

from app.invocations.app_config import App, ResumabilityConfig

__all__ = ["App", "ResumabilityConfig"]
