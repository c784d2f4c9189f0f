"""Per-name artifact version counters (atomic version allocation at save time).

Revision ID: 8c9cef3fb392
Revises: dd3102e13b06
Create Date: 2026-11-22 14:43:01.470215
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "8c9cef3fb392"
down_revision: str | None = "dd3102e13b06"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""

    op.create_table(
        "artifact_counters",
        sa.Column("app_name", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=1024), nullable=False),
        sa.Column(
            "session_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("next_version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.pk"],
            name=op.f("fk_artifact_counters_session_pk_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "app_name", "user_id", "session_id", "name", name=op.f("pk_artifact_counters")
        ),
    )
    with op.batch_alter_table("artifact_counters", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_artifact_counters_session_pk"), ["session_pk"], unique=False
        )


def downgrade() -> None:
    """Revert this migration."""

    with op.batch_alter_table("artifact_counters", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_artifact_counters_session_pk"))

    op.drop_table("artifact_counters")
