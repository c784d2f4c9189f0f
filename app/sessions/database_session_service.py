"""ADK import path: `from app.sessions.database_session_service import DatabaseSessionService`."""

from app.sessions.database import DatabaseSessionService

__all__ = ["DatabaseSessionService"]
