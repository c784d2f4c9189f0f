"""MemoryService on SQLAlchemy (SQLite or PostgreSQL), over the `memory_entries` table.

Each public method is one unit of work whose statements live in `MemoryRepository`. Adding a
session is one write transaction that inserts its entries unless remembered already, so
re-adding a session, even from two replicas at once, never duplicates an entry. Search matches
the query words against the stored lower-cased text (`%` and `_` in a query are literal),
filtered by app and user, newest first. A substring search needs no extension on either backend;
a full-text index can replace it behind the same port when recall quality or volume demands it.
"""

from typing import TYPE_CHECKING

from app.db.repositories.memory import MemoryRepository
from app.db.uow import UnitOfWork
from app.errors import DuplicateKey, RejectedValue, UnstorableValue
from app.memory.base import (
    BaseMemoryService,
    MemoryEntry,
    memory_entry,
    memory_records,
)
from app.sessions.models import Session

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


class DatabaseMemoryService(BaseMemoryService):
    """Memories of past sessions in a relational database."""

    def __init__(self, db_engine: "AsyncEngine") -> None:
        self._uow = UnitOfWork(db_engine)

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's final text events; events already remembered are skipped."""
        records = memory_records(session)
        if not records:
            return
        try:
            await self._uow.write(
                "add_memory",
                lambda db: MemoryRepository(db).add(
                    app_name=session.app_name,
                    user_id=session.user_id,
                    session_id=session.id,
                    records=records,
                ),
            )
        # The entry key's conflicts are skipped, so a constraint that still refuses a row
        # (as any other refusal) is about a value the database cannot hold.
        except (DuplicateKey, RejectedValue) as exc:
            raise UnstorableValue("The database refused a value of the memory.") from exc

    async def _search(
        self, *, app_name: str, user_id: str, words: list[str], limit: int
    ) -> list[MemoryEntry]:
        rows = await self._uow.read(
            lambda db: MemoryRepository(db).search(
                app_name=app_name, user_id=user_id, words=words, limit=limit
            )
        )
        return [memory_entry(*row) for row in rows]
