"""Rows of sessions, their events, and the app- and user-scoped state.

Sessions carry a surrogate integer key so events and artifact versions reference a narrow column;
the public key (app_name, user_id, id) is unique. Shared state is stored one row per key so that a
delta upserts only the keys it touches and two sessions writing different `user:` keys never lose
each other's write.
"""

from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, EpochSeconds, JsonType

ID_LENGTH = 128


class StorageSession(Base):
    """One conversation of one user with one app."""

    __tablename__ = "sessions"
    __table_args__ = (
        # Also what the session list reads: the user's sessions by (app_name, user_id), sorted
        # by update_time in the query. No index on update_time: every event append moves it,
        # and maintaining one cost 10 % of a /run and 14 % of a create (measured, README).
        UniqueConstraint("app_name", "user_id", "id"),
    )

    pk: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    app_name: Mapped[str] = mapped_column(String(ID_LENGTH))
    user_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    id: Mapped[str] = mapped_column(String(ID_LENGTH))
    state: Mapped[dict[str, Any]] = mapped_column(JsonType)
    last_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    create_time: Mapped[float] = mapped_column(EpochSeconds)
    update_time: Mapped[float] = mapped_column(EpochSeconds)


class StorageEvent(Base):
    """One persisted event; `event` holds its wire JSON (camelCase, None omitted, no seq)."""

    __tablename__ = "events"

    session_pk: Mapped[int] = mapped_column(
        ForeignKey("sessions.pk", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    id: Mapped[str] = mapped_column(String(ID_LENGTH))
    invocation_id: Mapped[str] = mapped_column(Text, index=True)
    author: Mapped[str] = mapped_column(Text)
    timestamp: Mapped[float] = mapped_column(EpochSeconds)
    event: Mapped[dict[str, Any]] = mapped_column(JsonType)


class StorageAppState(Base):
    """One `app:` state key of an app (stored without its prefix)."""

    __tablename__ = "app_states"

    app_name: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[Any] = mapped_column(JsonType, nullable=True)
    update_time: Mapped[float] = mapped_column(EpochSeconds)


class StorageUserState(Base):
    """One `user:` state key of a user in an app (stored without its prefix)."""

    __tablename__ = "user_states"

    app_name: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[Any] = mapped_column(JsonType, nullable=True)
    update_time: Mapped[float] = mapped_column(EpochSeconds)


def session_key(app_name: str, user_id: str, session_id: str) -> dict[str, str]:
    """The `k_*` parameters of a statement that addresses one session by its public key."""
    return {"k_app": app_name, "k_user": user_id, "k_id": session_id}
