"""ADK import path: `from app.apps.app import App, ResumabilityConfig`."""

from app.invocations.app_config import App, ResumabilityConfig

__all__ = ["App", "ResumabilityConfig"]
