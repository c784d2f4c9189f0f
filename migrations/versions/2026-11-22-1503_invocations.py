"""Invocations and the per-session run lease.

Revision ID: 35bda7f3e610
Revises: 917ace55259d
Create Date: 2026-11-22 15:03:23.632498
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "35bda7f3e610"
down_revision: str | None = "917ace55259d"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""

    op.create_table(
        "invocations",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("app_name", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column(
            "session_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column(
            "request",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column(
            "error",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("create_time", sa.Double(), nullable=False),
        sa.Column("start_time", sa.Double(), nullable=True),
        sa.Column("end_time", sa.Double(), nullable=True),
        sa.Column("lease_expires_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.pk"],
            name=op.f("fk_invocations_session_pk_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invocations")),
        sa.UniqueConstraint(
            "app_name",
            "user_id",
            "session_id",
            "idempotency_key",
            name=op.f("uq_invocations_app_name_user_id_session_id_idempotency_key"),
        ),
    )
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_invocations_session_pk_status", ["session_pk", "status"], unique=False
        )

    op.create_table(
        "session_leases",
        sa.Column(
            "session_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("invocation_id", sa.String(length=128), nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.pk"],
            name=op.f("fk_session_leases_session_pk_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_pk", name=op.f("pk_session_leases")),
    )


def downgrade() -> None:
    """Revert this migration."""

    op.drop_table("session_leases")
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.drop_index("ix_invocations_session_pk_status")

    op.drop_table("invocations")
