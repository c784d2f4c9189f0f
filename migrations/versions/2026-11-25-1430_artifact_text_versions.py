"""Artifact versions remember whether they were saved from a text Part (read back as text).

Revision ID: c15a1text0001
Revises: a64ec219ead0
Create Date: 2026-11-25 14:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "c15a1text0001"
down_revision: str | None = "a64ec219ead0"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""

    # Existing rows become False: their bytes cannot tell a text Part from inline text/plain data,
    # so they keep reading back as inline data, as they did when they were saved.
    with op.batch_alter_table("artifact_versions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("is_text", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    """Revert this migration."""

    with op.batch_alter_table("artifact_versions", schema=None) as batch_op:
        batch_op.drop_column("is_text")
