"""ADK import path: `app.sessions.base_session_service`."""

from app.sessions.base import BaseSessionService, GetSessionConfig

__all__ = ["BaseSessionService", "GetSessionConfig"]
