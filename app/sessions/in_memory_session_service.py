"""ADK import path: `from app.sessions.in_memory_session_service import InMemorySessionService`."""

from app.sessions.in_memory import InMemorySessionService

__all__ = ["InMemorySessionService"]
