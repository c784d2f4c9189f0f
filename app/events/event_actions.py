"""ADK import path: `from app.events.event_actions import EventActions`."""

from app.sessions.models import EventActions

__all__ = ["EventActions"]
