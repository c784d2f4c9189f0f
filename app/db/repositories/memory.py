"""Every statement on memory entries: remembering events and recalling them by keyword.

Entries are inserted with `ON CONFLICT DO NOTHING` on the (app, user, session, event id) key, one
execution per row of one registered statement (an executemany), so re-adding a session never
duplicates an entry, two replicas adding the same session at once never fail, and no batch can
reach the drivers' bound-parameter limits. Search matches each query word against the stored
lower-cased text with an escaped `LIKE` (`%` and `_` in a query are literal), filtered by app and
user on the (app_name, user_id) index, newest first.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Table, bindparam, or_, select
from sqlalchemy.dialects import postgresql, sqlite

from app.db.sqlite import register
from app.db.tables import StorageMemoryEntry
from app.db.uow import Db

if TYPE_CHECKING:
    from app.memory.base import MemoryRecord

_entries = cast(Table, StorageMemoryEntry.__table__)


def _insert_new(dialect: Any) -> Any:
    return register(
        dialect.insert(_entries).on_conflict_do_nothing(
            index_elements=["app_name", "user_id", "session_id", "event_id"]
        )
    )


#: Insert an entry unless its (app, user, session, event id) is remembered already, per dialect.
_INSERT_NEW = {"sqlite": _insert_new(sqlite), "postgresql": _insert_new(postgresql)}


class MemoryRepository:
    """Statements on the memory entries table, run on the `Db` of the caller's unit of work."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def add(
        self, *, app_name: str, user_id: str, session_id: str, records: Sequence["MemoryRecord"]
    ) -> None:
        """Insert an entry per record of the session, skipping those remembered already."""
        if not records:
            return
        rows = [
            {
                "app_name": app_name,
                "user_id": user_id,
                "session_id": session_id,
                "event_id": record.event_id,
                "author": record.author,
                "timestamp": record.timestamp,
                "text": record.text,
                "content": record.content,
            }
            for record in records
        ]
        self._db.execute(_INSERT_NEW[self._db.dialect.name], rows)

    def search(self, *, app_name: str, user_id: str, words: Sequence[str], limit: int) -> list[Any]:
        """Up to `limit` entries of the user in the app whose text contains any of `words`
        (lower-cased), newest first; rows of (content, event_id, author, timestamp)."""
        # One LIKE per query word, so the statement's shape changes with the query: it is built
        # per call and not registered, and the fast path compiles it for this call only rather
        # than caching a plan for every shape a query can take.
        statement = (
            select(_entries.c.content, _entries.c.event_id, _entries.c.author, _entries.c.timestamp)
            .where(
                _entries.c.app_name == bindparam("k_app"),
                _entries.c.user_id == bindparam("k_user"),
                or_(*(_entries.c.text.contains(word, autoescape=True) for word in words)),
            )
            .order_by(_entries.c.timestamp.desc(), _entries.c.pk.desc())
            .limit(bindparam("k_limit"))
        )
        params = {"k_app": app_name, "k_user": user_id, "k_limit": limit}
        return list(self._db.execute(statement, params).all())


__all__ = ["MemoryRepository"]
