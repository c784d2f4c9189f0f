"""Memory entries: remembered text events of past sessions, for keyword recall.

Revision ID: 917ace55259d
Revises: 8c9cef3fb392
Create Date: 2026-11-22 14:51:54.653473
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "917ace55259d"
down_revision: str | None = "8c9cef3fb392"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""

    op.create_table(
        "memory_entries",
        sa.Column(
            "pk",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("app_name", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("event_id", sa.String(length=128), nullable=False),
        sa.Column("author", sa.Text(), nullable=False),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column(
            "content",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_memory_entries")),
        sa.UniqueConstraint(
            "app_name",
            "user_id",
            "session_id",
            "event_id",
            name=op.f("uq_memory_entries_app_name_user_id_session_id_event_id"),
        ),
    )
    with op.batch_alter_table("memory_entries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_memory_entries_app_name_user_id", ["app_name", "user_id"], unique=False
        )


def downgrade() -> None:
    """Revert this migration."""

    with op.batch_alter_table("memory_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_memory_entries_app_name_user_id")

    op.drop_table("memory_entries")
