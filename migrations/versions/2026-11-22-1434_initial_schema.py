"""Sessions, events, app/user state and artifact version rows.

Revision ID: dd3102e13b06
Revises:
Create Date: 2026-11-22 14:34:08.058065
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "dd3102e13b06"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this migration."""

    op.create_table(
        "app_states",
        sa.Column("app_name", sa.String(length=128), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column(
            "value",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("update_time", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "key", name=op.f("pk_app_states")),
    )
    op.create_table(
        "sessions",
        sa.Column(
            "pk",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("app_name", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column(
            "state",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("create_time", sa.Double(), nullable=False),
        sa.Column("update_time", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_sessions")),
        sa.UniqueConstraint(
            "app_name", "user_id", "id", name=op.f("uq_sessions_app_name_user_id_id")
        ),
    )
    op.create_table(
        "user_states",
        sa.Column("app_name", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column(
            "value",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("update_time", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "key", name=op.f("pk_user_states")),
    )
    op.create_table(
        "artifact_versions",
        sa.Column(
            "pk",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("app_name", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column(
            "session_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("event_seq", sa.BigInteger(), nullable=True),
        sa.Column("name", sa.String(length=1024), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("mime_type", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("blob_key", sa.Text(), nullable=False),
        sa.Column(
            "custom_metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("create_time", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.pk"],
            name=op.f("fk_artifact_versions_session_pk_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_artifact_versions")),
        sa.UniqueConstraint(
            "app_name",
            "user_id",
            "session_id",
            "name",
            "version",
            name=op.f("uq_artifact_versions_app_name_user_id_session_id_name_version"),
        ),
    )
    with op.batch_alter_table("artifact_versions", schema=None) as batch_op:
        batch_op.create_index("ix_artifact_versions_blob_key", ["blob_key"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_artifact_versions_session_pk"), ["session_pk"], unique=False
        )

    op.create_table(
        "events",
        sa.Column(
            "session_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("invocation_id", sa.Text(), nullable=False),
        sa.Column("author", sa.Text(), nullable=False),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.Column(
            "event",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.pk"],
            name=op.f("fk_events_session_pk_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_pk", "seq", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_events_invocation_id"), ["invocation_id"], unique=False
        )


def downgrade() -> None:
    """Revert this migration."""

    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_events_invocation_id"))

    op.drop_table("events")
    with op.batch_alter_table("artifact_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_artifact_versions_session_pk"))
        batch_op.drop_index("ix_artifact_versions_blob_key")

    op.drop_table("artifact_versions")
    op.drop_table("user_states")
    op.drop_table("sessions")
    op.drop_table("app_states")
