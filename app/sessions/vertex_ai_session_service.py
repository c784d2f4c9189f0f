"""ADK import path: `app.sessions.vertex_ai_session_service` (a name only: no Vertex AI client).

Constructing `VertexAiSessionService` raises `GoogleCloudNotSupported`, so ADK code that picks it
fails at start-up with a message saying what to use instead.
"""

from typing import Any

from app.errors import GoogleCloudNotSupported
from app.sessions.base import BaseSessionService


class VertexAiSessionService(BaseSessionService):
    """ADK's Vertex AI Agent Engine session service; constructing it raises."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> "VertexAiSessionService":
        """Refuse: agentd keeps sessions in its own database."""
        raise GoogleCloudNotSupported(
            "VertexAiSessionService",
            "DatabaseSessionService (SQLite or PostgreSQL) or InMemorySessionService",
        )


__all__ = ["VertexAiSessionService"]
