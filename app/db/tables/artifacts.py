"""Artifact version rows: metadata of each saved version; the bytes live in the blob store.

A row exists only once the event naming it in its `artifactDelta` has committed, so a visible
version always has a durable event behind it. User-scoped artifacts (`user:` names) carry
`session_id = ''` (never a valid session id), so a session literally named `user` cannot collide
with the user scope; session-scoped rows reference their session and die with it.
"""

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, EpochSeconds, JsonType
from app.db.tables.sessions import ID_LENGTH

USER_SCOPE = ""


class StorageArtifactVersion(Base):
    """One version of one named artifact."""

    __tablename__ = "artifact_versions"
    __table_args__ = (
        UniqueConstraint("app_name", "user_id", "session_id", "name", "version"),
        Index("ix_artifact_versions_blob_key", "blob_key"),
    )

    pk: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    app_name: Mapped[str] = mapped_column(String(ID_LENGTH))
    user_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    session_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    session_pk: Mapped[int | None] = mapped_column(
        ForeignKey("sessions.pk", ondelete="CASCADE"), nullable=True, index=True
    )
    event_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    name: Mapped[str] = mapped_column(String(1024))
    version: Mapped[int] = mapped_column(Integer)
    mime_type: Mapped[str] = mapped_column(Text)
    #: Saved from a text Part: read back as text, and ADK's metadata carries no mime type then
    #: (`mime_type` holds what the raw download answers with). Rows from before the column are
    #: False: their bytes alone cannot tell a text Part from inline `text/plain` data.
    is_text: Mapped[bool] = mapped_column(Boolean, server_default=false())
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    blob_key: Mapped[str] = mapped_column(Text)
    custom_metadata: Mapped[dict[str, Any]] = mapped_column(JsonType)
    create_time: Mapped[float] = mapped_column(EpochSeconds)


class StorageArtifactCounter(Base):
    """The next version number of one artifact name, allocated atomically at save time.

    Allocation happens before the carrying event commits, in its own tiny transaction, so
    concurrent saves of one name (even of a `user:` name from different sessions, on different
    replicas) can never be handed the same version. A save whose event then fails burns its number:
    versions may have gaps, never duplicates. The counter outlives `DELETE artifact`, so a deleted
    name never reuses an old version number; it dies with its session.
    """

    __tablename__ = "artifact_counters"

    app_name: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(String(1024), primary_key=True)
    session_pk: Mapped[int | None] = mapped_column(
        ForeignKey("sessions.pk", ondelete="CASCADE"), nullable=True, index=True
    )
    next_version: Mapped[int] = mapped_column(Integer)
