"""ADK import path: `from app.apps import App, ResumabilityConfig` (defined beside the Runner)."""

from app.invocations.runner import App, ResumabilityConfig

__all__ = ["App", "ResumabilityConfig"]
