"""MemoryService on SQLAlchemy (SQLite or PostgreSQL), over the `memory_entries` table.

Each public method is one unit of work. Adding a session is one write transaction of
`INSERT ... ON CONFLICT DO NOTHING` on the (app, user, session, event id) key, in batches so a
long session stays under the drivers' bound-parameter limits; re-adding a session, even from two
replicas at once, never duplicates an entry. Search matches the query words against the stored
lower-cased text with escaped `LIKE` patterns (`%` and `_` in a query are literal), filtered by
app and user on the (app_name, user_id) index, newest first. A substring search needs no extension
on either backend; a full-text index can replace it behind the same port when recall quality or
volume demands it.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import DbSession, create_sessionmaker, write_options
from app.db.tables.memory import StorageMemoryEntry
from app.errors import UnstorableValue
from app.memory.base import (
    BaseMemoryService,
    MemoryRecord,
    SearchMemoryResponse,
    memory_entry,
    memory_records,
    query_words,
)
from app.sessions.models import Session

#: Rows per INSERT: 9 parameters each stays far below SQLite's and asyncpg's 32,767 limit.
INSERT_BATCH_SIZE = 500

_KEY = ["app_name", "user_id", "session_id", "event_id"]


class DatabaseMemoryService(BaseMemoryService):
    """Memories of past sessions in a relational database."""

    def __init__(self, db_engine: AsyncEngine) -> None:
        self._sessionmaker = create_sessionmaker(db_engine)
        self._dialect = db_engine.dialect.name

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[DbSession]:
        async with self._sessionmaker() as db, db.begin():
            await db.connection(execution_options=write_options)
            yield db

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's final text events; events already remembered are skipped."""
        records = memory_records(session)
        if not records:
            return
        insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        try:
            async with self._write() as db:
                for start in range(0, len(records), INSERT_BATCH_SIZE):
                    batch = records[start : start + INSERT_BATCH_SIZE]
                    rows = [_row(session, record) for record in batch]
                    await db.execute(
                        insert(StorageMemoryEntry)
                        .values(rows)
                        .on_conflict_do_nothing(index_elements=_KEY)
                    )
        except DBAPIError as exc:
            raise UnstorableValue(f"The database rejected the memory: {exc.orig}") from exc

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str, limit: int = 20
    ) -> SearchMemoryResponse:
        """Entries of the user's remembered sessions of the app matching `query`, newest first."""
        words = query_words(query)
        if not words or limit <= 0:
            return SearchMemoryResponse()
        statement = (
            select(
                StorageMemoryEntry.content,
                StorageMemoryEntry.event_id,
                StorageMemoryEntry.author,
                StorageMemoryEntry.timestamp,
            )
            .where(
                StorageMemoryEntry.app_name == app_name,
                StorageMemoryEntry.user_id == user_id,
                or_(*(StorageMemoryEntry.text.contains(w, autoescape=True) for w in words)),
            )
            .order_by(StorageMemoryEntry.timestamp.desc(), StorageMemoryEntry.pk.desc())
            .limit(limit)
        )
        async with self._sessionmaker() as db:
            rows = (await db.execute(statement)).all()
        return SearchMemoryResponse(memories=[memory_entry(*row) for row in rows])


def _row(session: Session, record: MemoryRecord) -> dict[str, Any]:
    return {
        "app_name": session.app_name,
        "user_id": session.user_id,
        "session_id": session.id,
        "event_id": record.event_id,
        "author": record.author,
        "timestamp": record.timestamp,
        "text": record.text,
        "content": record.content,
    }
