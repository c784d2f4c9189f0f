"""API keys: only a hash of each secret is stored; a key is bound to apps and to one user or all."""

from typing import Any

from sqlalchemy import Boolean, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, EpochSeconds, JsonType
from app.db.tables.sessions import ID_LENGTH


class StorageApiKey(Base):
    """One API key (revocable)."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    apps: Mapped[list[str] | None] = mapped_column(JsonType, nullable=True)
    user_id: Mapped[str | None] = mapped_column(String(ID_LENGTH), nullable=True)
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    create_time: Mapped[float] = mapped_column(EpochSeconds)
    revoke_time: Mapped[float | None] = mapped_column(EpochSeconds, nullable=True)
    extra: Mapped[dict[str, Any] | None] = mapped_column(JsonType, nullable=True)
