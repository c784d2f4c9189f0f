"""Durable runs: how many times an invocation was started and when its owner last renewed it.

Revision ID: c19a1attempt1
Revises: c18a1action01
Create Date: 2026-11-25 19:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "c19a1attempt1"
down_revision: str | None = "c18a1action01"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("attempt", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
        batch_op.add_column(sa.Column("heartbeat_time", sa.Double(), nullable=True))


def downgrade() -> None:
    """Revert this migration."""
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.drop_column("heartbeat_time")
        batch_op.drop_column("attempt")
