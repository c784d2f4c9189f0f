"""ADK import path: `app.memory.base_memory_service`."""

from app.memory.base import BaseMemoryService, SearchMemoryResponse

__all__ = ["BaseMemoryService", "SearchMemoryResponse"]
