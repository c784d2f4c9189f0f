"""ADK import path: `app.memory.vertex_ai_rag_memory_service` (a name only: no Vertex AI client).

Constructing `VertexAiRagMemoryService` raises `GoogleCloudNotSupported`, so ADK code that picks
it fails at start-up with a message saying what to use instead.
"""

from typing import Any

from app.errors import GoogleCloudNotSupported
from app.memory.base import BaseMemoryService
from app.memory.vertex_ai_memory_bank_service import INSTEAD


class VertexAiRagMemoryService(BaseMemoryService):
    """ADK's Vertex AI RAG memory service; constructing it raises."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> "VertexAiRagMemoryService":
        """Refuse: agentd keeps memories in its own database."""
        raise GoogleCloudNotSupported("VertexAiRagMemoryService", INSTEAD)


__all__ = ["VertexAiRagMemoryService"]
