"""Memory: recall across a user's past sessions; the MemoryService port and its implementations."""

from app.memory.base import BaseMemoryService, MemoryEntry, SearchMemoryResponse
from app.memory.database import DatabaseMemoryService
from app.memory.in_memory import InMemoryMemoryService

__all__ = [
    "BaseMemoryService",
    "DatabaseMemoryService",
    "InMemoryMemoryService",
    "MemoryEntry",
    "SearchMemoryResponse",
]
