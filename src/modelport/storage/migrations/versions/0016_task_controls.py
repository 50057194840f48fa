"""media task controls: idempotency keys, progress, chosen webhook events, per-task result retention

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 22:20:00

`idempotency_keys`: one row per (team, Idempotency-Key) of a task creation, asset registration or file
upload; the primary key is what makes concurrent duplicates (any process) yield one operation. Rows expire
after a day and are pruned. `media_tasks` gains `progress` (0-100, null when unknown), `webhook_events`
(the events the creator chose, comma-separated; null: the terminal ones) and `result_retention_seconds`
(null: the deployment's), and an index on `(status, created_at_ms)` for a queued task's position.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("team_id", sa.String(length=40), sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=8), nullable=False),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "key"),
    )
    op.create_index("ix_idempotency_keys_expires", "idempotency_keys", ["expires_at_ms"], unique=False)
    with op.batch_alter_table("media_tasks") as batch:
        batch.add_column(sa.Column("progress", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("webhook_events", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("result_retention_seconds", sa.BigInteger(), nullable=True))
    op.create_index("ix_media_tasks_status_created", "media_tasks", ["status", "created_at_ms"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_media_tasks_status_created", table_name="media_tasks")
    with op.batch_alter_table("media_tasks") as batch:
        batch.drop_column("result_retention_seconds")
        batch.drop_column("webhook_events")
        batch.drop_column("progress")
    op.drop_index("ix_idempotency_keys_expires", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
