"""The session list reads newest first: an index on (app_name, user_id, update_time, id).

Revision ID: c15b1sessions01
Revises: c15a1text0001
Create Date: 2026-11-25 15:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "c15b1sessions01"
down_revision: str | None = "c15a1text0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""

    # Each page of `GET .../sessions` is then one index range (a keyset on update_time, id)
    # instead of a sort of all the user's sessions.
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_sessions_recent", ["app_name", "user_id", "update_time", "id"], unique=False
        )


def downgrade() -> None:
    """Revert this migration."""

    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_sessions_recent")
