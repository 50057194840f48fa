"""media tasks, webhook secrets, webhook outbox and attempts

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 14:20:00

Asynchronous media tasks (`POST /<provider>/<model>`, `GET /api/v1/tasks/...`) and their signed webhooks.
The queue engine's own tables (PgQueuer, PostgreSQL only) are installed by `storage.migrate` beside these.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _big_id() -> sa.types.TypeEngine[int]:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "media_tasks",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("model_id", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("input", sa.JSON(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("frozen_micros", sa.BigInteger(), nullable=False),
        sa.Column("cost_micros", sa.BigInteger(), nullable=True),
        sa.Column("webhook_url", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=True),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("deadline_ms", sa.BigInteger(), nullable=False),
        sa.Column("resources", sa.JSON(), nullable=True),
        sa.Column("result_metadata", sa.JSON(), nullable=True),
        sa.Column("error_code", sa.String(length=32), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("ended_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("result_expires_at_ms", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], name=op.f("fk_media_tasks_team_id_teams")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_media_tasks")),
    )
    op.create_index("ix_media_tasks_team_created", "media_tasks", ["team_id", "created_at_ms"])
    op.create_index("ix_media_tasks_team_status", "media_tasks", ["team_id", "status"])
    op.create_index("ix_media_tasks_status_lease", "media_tasks", ["status", "lease_until_ms"])

    op.create_table(
        "webhook_secrets",
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("secret", sa.String(length=100), nullable=False),
        sa.Column("previous_secret", sa.String(length=100), nullable=True),
        sa.Column("previous_until_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], name=op.f("fk_webhook_secrets_team_id_teams")),
        sa.PrimaryKeyConstraint("team_id", name=op.f("pk_webhook_secrets")),
    )

    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=False),
        sa.Column("give_up_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("ended_at_ms", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["task_id"], ["media_tasks.id"], name=op.f("fk_webhook_deliveries_task_id_media_tasks")
        ),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], name=op.f("fk_webhook_deliveries_team_id_teams")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(op.f("ix_webhook_deliveries_task_id"), "webhook_deliveries", ["task_id"])
    op.create_index("ix_webhook_deliveries_status_next", "webhook_deliveries", ["status", "next_attempt_at_ms"])

    op.create_table(
        "webhook_attempts",
        sa.Column("id", _big_id(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("duration_ms", sa.BigInteger(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"], ["webhook_deliveries.id"], name=op.f("fk_webhook_attempts_delivery_id_webhook_deliveries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_attempts")),
    )
    op.create_index(op.f("ix_webhook_attempts_delivery_id"), "webhook_attempts", ["delivery_id"])


def downgrade() -> None:
    op.drop_table("webhook_attempts")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_secrets")
    op.drop_table("media_tasks")
