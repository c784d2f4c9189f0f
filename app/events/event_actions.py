"""ADK import path: `from app.events.event_actions import EventActions, EventCompaction`."""

from app.sessions.models import EventActions, EventCompaction

__all__ = ["EventActions", "EventCompaction"]
