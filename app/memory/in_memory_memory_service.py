"""ADK import path: `from app.memory.in_memory_memory_service import InMemoryMemoryService`."""

from app.memory.in_memory import InMemoryMemoryService

__all__ = ["InMemoryMemoryService"]
