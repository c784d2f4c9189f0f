"""ADK import path: `from app.events import Event, EventActions` (the models live in sessions)."""

from app.sessions.models import Event, EventActions

__all__ = ["Event", "EventActions"]
