"""API keys (hashed secrets, bound to apps and users).

Revision ID: a64ec219ead0
Revises: 35bda7f3e610
Create Date: 2026-11-22 15:16:38.632109
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "a64ec219ead0"
down_revision: str | None = "35bda7f3e610"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column(
            "apps",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("user_id", sa.String(length=128), nullable=True),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.Column("create_time", sa.Double(), nullable=False),
        sa.Column("revoke_time", sa.Double(), nullable=True),
        sa.Column(
            "extra",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
    )


def downgrade() -> None:
    """Revert this migration."""

    op.drop_table("api_keys")
