"""usage rollups: the key of each request log row, and daily usage per team, key and model

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 17:00:00

The console's usage pages read `usage_daily` (one row per team, UTC day, key and model), kept by the
request log writer in the same transaction as the log rows, so they stay fast at millions of log rows.
`request_logs.key_id` says which key made a request (rows from before this revision have none: their
usage counts under key ''). Two more indexes serve the console's log filters by model and by status, and
one the billing page's totals per kind over a period.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("key_id", sa.String(length=40), nullable=True))
        batch_op.create_index(
            "ix_request_logs_team_model_created_id", ["team_id", "model_name", "created_at_ms", "id"], unique=False
        )
        batch_op.create_index(
            "ix_request_logs_team_status_created_id", ["team_id", "status", "created_at_ms", "id"], unique=False
        )
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_ledger_entries_team_created", ["team_id", "created_at_ms", "kind", "amount_micros"], unique=False
        )
    op.create_table(
        "usage_daily",
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("day", sa.BigInteger(), nullable=False),
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("provider", sa.String(length=100), nullable=False),
        sa.Column("model_name", sa.String(length=200), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_micros", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "day", "key_id", "provider", "model_name", name=op.f("pk_usage_daily")),
    )
    # Rows logged before this revision: rolled up once, so the pages agree with the log from the start.
    op.execute(
        "INSERT INTO usage_daily (team_id, day, key_id, provider, model_name, requests, errors, prompt_tokens,"
        " completion_tokens, cached_tokens, cost_micros) "
        "SELECT team_id, created_at_ms / 86400000, '', provider, model_name, count(*),"
        " sum(CASE WHEN status = 'success' THEN 0 ELSE 1 END), coalesce(sum(prompt_tokens), 0),"
        " coalesce(sum(completion_tokens), 0), coalesce(sum(cached_tokens), 0), coalesce(sum(cost_micros), 0) "
        "FROM request_logs GROUP BY team_id, created_at_ms / 86400000, provider, model_name"
    )


def downgrade() -> None:
    op.drop_table("usage_daily")
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_ledger_entries_team_created")
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.drop_index("ix_request_logs_team_status_created_id")
        batch_op.drop_index("ix_request_logs_team_model_created_id")
        batch_op.drop_column("key_id")
