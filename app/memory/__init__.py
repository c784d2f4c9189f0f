"""Memory: recall across a user's past sessions; the MemoryService port and its implementations."""

from app.memory.base import BaseMemoryService, MemoryEntry, SearchMemoryResponse
from app.memory.database import DatabaseMemoryService
from app.memory.in_memory import InMemoryMemoryService
from app.memory.vertex_ai_memory_bank_service import VertexAiMemoryBankService
from app.memory.vertex_ai_rag_memory_service import VertexAiRagMemoryService

__all__ = [
    "BaseMemoryService",
    "DatabaseMemoryService",
    "InMemoryMemoryService",
    "MemoryEntry",
    "SearchMemoryResponse",
    "VertexAiMemoryBankService",
    "VertexAiRagMemoryService",
]
