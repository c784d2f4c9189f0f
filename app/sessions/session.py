"""ADK import path: `from app.sessions.session import Session`."""

from app.sessions.models import Session

__all__ = ["Session"]
