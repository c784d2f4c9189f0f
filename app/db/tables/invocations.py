"""Invocations (runs of an app for one user message) and the per-session run lease.

`session_leases` holds at most one row per session: the invocation allowed to run on it and
when that permission expires. The owner renews it while the run is alive; a replica that dies
stops renewing, so the lease expires and another process takes the invocation over (resuming it
from its last committed event, `attempt` + 1) or, after AGENTD_MAX_ATTEMPTS, marks it `failed`
with `invocation-interrupted`. Everything that must be coordinated across
replicas lives here, in the database.
"""

from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, EpochSeconds, JsonType
from app.db.tables.sessions import ID_LENGTH

STATUS_LENGTH = 16


class StorageInvocation(Base):
    """One invocation and its lifecycle."""

    __tablename__ = "invocations"
    __table_args__ = (
        UniqueConstraint("app_name", "user_id", "session_id", "idempotency_key"),
        Index("ix_invocations_session_pk_status", "session_pk", "status"),
    )

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    app_name: Mapped[str] = mapped_column(String(ID_LENGTH))
    user_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    session_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    session_pk: Mapped[int] = mapped_column(ForeignKey("sessions.pk", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(STATUS_LENGTH))
    mode: Mapped[str] = mapped_column(String(STATUS_LENGTH))
    request: Mapped[dict[str, Any]] = mapped_column(JsonType)
    request_hash: Mapped[str] = mapped_column(String(64))
    idempotency_key: Mapped[str | None] = mapped_column(String(255), nullable=True)
    error: Mapped[dict[str, Any] | None] = mapped_column(JsonType, nullable=True)
    #: While `requires_action`: the calls the client must answer (`{"calls": [...]}`).
    required_action: Mapped[dict[str, Any] | None] = mapped_column(JsonType, nullable=True)
    owner: Mapped[str] = mapped_column(Text)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    create_time: Mapped[float] = mapped_column(EpochSeconds)
    start_time: Mapped[float | None] = mapped_column(EpochSeconds, nullable=True)
    end_time: Mapped[float | None] = mapped_column(EpochSeconds, nullable=True)
    lease_expires_at: Mapped[float] = mapped_column(EpochSeconds)
    #: How many times a process started running it (a takeover after its owner died adds one).
    attempt: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    #: When its owner last renewed it (None before it first runs).
    heartbeat_time: Mapped[float | None] = mapped_column(EpochSeconds, nullable=True)


class StorageSessionLease(Base):
    """The one invocation allowed to run on a session, until `expires_at`."""

    __tablename__ = "session_leases"

    session_pk: Mapped[int] = mapped_column(
        ForeignKey("sessions.pk", ondelete="CASCADE"), primary_key=True
    )
    invocation_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    owner: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[float] = mapped_column(EpochSeconds)
