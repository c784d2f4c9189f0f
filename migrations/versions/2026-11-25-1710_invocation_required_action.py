"""Invocations waiting for the client remember what they wait for (`requires_action`).

Revision ID: c18a1action01
Revises: c15a1text0001
Create Date: 2026-11-25 17:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "c18a1action01"
down_revision: str | None = "c15a1text0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "required_action",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    """Revert this migration."""
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.drop_column("required_action")
