"""webhook outbox for every event; team notifications: team_notifications, notification_marks

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26 01:30:00

The outbox carries events that report no task: team notifications (`source = 'notification'`, a team,
no task) and operator alerts (`source = 'operator'`, neither). Existing rows are task webhooks. The index
on (source, team_id, created_at_ms) serves a team's notification deliveries page and their pruning.

`team_notifications`: a team's notification settings (url, thresholds) and the flags that send each balance
event once per crossing. `notification_marks`: one row per key event sent (its primary key makes it once).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "team_notifications",
        sa.Column("team_id", sa.String(length=40), sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("balance_below_micros", sa.BigInteger(), nullable=True),
        sa.Column("key_spend_percent", sa.String(length=64), nullable=True),
        sa.Column("key_expiry_days", sa.Integer(), nullable=True),
        sa.Column("balance_low_sent", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("exhausted_sent", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", name=op.f("pk_team_notifications")),
    )
    op.create_table(
        "notification_marks",
        sa.Column("key_id", sa.String(length=40), sa.ForeignKey("api_keys.id"), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("period_ms", sa.BigInteger(), nullable=False),
        sa.Column("percent", sa.Integer(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key_id", "event", "period_ms", "percent", name=op.f("pk_notification_marks")),
    )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("source", sa.String(length=16), nullable=False, server_default="task"))
        batch.alter_column("task_id", existing_type=sa.String(length=64), nullable=True)
        batch.alter_column("team_id", existing_type=sa.String(length=40), nullable=True)
    op.create_index(
        "ix_webhook_deliveries_source_team_created",
        "webhook_deliveries",
        ["source", "team_id", "created_at_ms"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_source_team_created", table_name="webhook_deliveries")
    op.execute(
        "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE source <> 'task')"
    )
    op.execute("DELETE FROM webhook_deliveries WHERE source <> 'task'")
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.alter_column("team_id", existing_type=sa.String(length=40), nullable=False)
        batch.alter_column("task_id", existing_type=sa.String(length=64), nullable=False)
        batch.drop_column("source")
    op.drop_table("notification_marks")
    op.drop_table("team_notifications")
