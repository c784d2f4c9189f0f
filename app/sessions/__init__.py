"""Sessions: wire models, state scopes, the SessionService port and its implementations."""

from app.sessions.base import BaseSessionService, GetSessionConfig
from app.sessions.database import DatabaseSessionService
from app.sessions.in_memory import InMemorySessionService
from app.sessions.models import Event, EventActions, Session
from app.sessions.state import State
from app.sessions.vertex_ai_session_service import VertexAiSessionService

__all__ = [
    "BaseSessionService",
    "DatabaseSessionService",
    "Event",
    "EventActions",
    "GetSessionConfig",
    "InMemorySessionService",
    "Session",
    "State",
    "VertexAiSessionService",
]
