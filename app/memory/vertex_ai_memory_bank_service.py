"""ADK import path: `app.memory.vertex_ai_memory_bank_service` (a name only: no Vertex AI client).

Constructing `VertexAiMemoryBankService` raises `GoogleCloudNotSupported`, so ADK code that picks
it fails at start-up with a message saying what to use instead.
"""

from typing import Any

from app.errors import GoogleCloudNotSupported
from app.memory.base import BaseMemoryService

#: What the Vertex AI memory services' errors point to.
INSTEAD = "DatabaseMemoryService (SQLite or PostgreSQL) or InMemoryMemoryService"


class VertexAiMemoryBankService(BaseMemoryService):
    """ADK's Vertex AI Memory Bank service; constructing it raises."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> "VertexAiMemoryBankService":
        """Refuse: agentd keeps memories in its own database."""
        raise GoogleCloudNotSupported("VertexAiMemoryBankService", INSTEAD)


__all__ = ["VertexAiMemoryBankService"]
