"""ADK import path: `from app.events.event import Event`."""

from app.sessions.models import Event

__all__ = ["Event"]
