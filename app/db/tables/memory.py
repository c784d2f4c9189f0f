"""Memory entry rows: the remembered text events of a user's past sessions, for keyword recall.

One row per remembered event, unique on (app, user, session, event id), so re-adding a session
inserts only events not seen before. `text` is the lower-cased concatenation of the event's text
parts (what search matches against); `content` is the event content's JSON (what search returns).
Rows carry no foreign key to `sessions`: memory is meant to outlive the session it came from.
"""

from typing import Any

from sqlalchemy import BigInteger, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, EpochSeconds, JsonType
from app.db.tables.sessions import ID_LENGTH


class StorageMemoryEntry(Base):
    """One remembered event of one session of a user in an app."""

    __tablename__ = "memory_entries"
    __table_args__ = (
        UniqueConstraint("app_name", "user_id", "session_id", "event_id"),
        Index("ix_memory_entries_app_name_user_id", "app_name", "user_id"),
    )

    pk: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    app_name: Mapped[str] = mapped_column(String(ID_LENGTH))
    user_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    session_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    event_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    author: Mapped[str] = mapped_column(Text)
    timestamp: Mapped[float] = mapped_column(EpochSeconds)
    text: Mapped[str] = mapped_column(Text)
    content: Mapped[dict[str, Any]] = mapped_column(JsonType)
