"""request log indexes with id, and hourly request log counts

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24 10:00:00

The log lists newest first by (created_at_ms, id): the indexes end in `id` so a page is read in index
order, and the ids of a page come from the index alone. `request_log_counts` holds per-hour row counts
(per team, and per team and end user) that `GET /v1/logs` sums for an exact `total`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.drop_index("ix_request_logs_team_user_created")
        batch_op.drop_index("ix_request_logs_team_created")
        batch_op.create_index("ix_request_logs_team_created_id", ["team_id", "created_at_ms", "id"], unique=False)
        batch_op.create_index(
            "ix_request_logs_team_user_created_id", ["team_id", "svc_user_id", "created_at_ms", "id"], unique=False
        )
    op.create_table(
        "request_log_counts",
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("svc_user_id", sa.String(length=128), nullable=False),
        sa.Column("hour", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "svc_user_id", "hour", name=op.f("pk_request_log_counts")),
    )
    # Rows logged before this revision: count them once, so totals agree with the rows from the start.
    op.execute(
        "INSERT INTO request_log_counts (team_id, svc_user_id, hour, n) "
        "SELECT team_id, '', created_at_ms / 3600000, count(*) FROM request_logs "
        "GROUP BY team_id, created_at_ms / 3600000"
    )
    op.execute(
        "INSERT INTO request_log_counts (team_id, svc_user_id, hour, n) "
        "SELECT team_id, svc_user_id, created_at_ms / 3600000, count(*) FROM request_logs "
        "WHERE svc_user_id IS NOT NULL GROUP BY team_id, svc_user_id, created_at_ms / 3600000"
    )


def downgrade() -> None:
    op.drop_table("request_log_counts")
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.drop_index("ix_request_logs_team_user_created_id")
        batch_op.drop_index("ix_request_logs_team_created_id")
        batch_op.create_index("ix_request_logs_team_created", ["team_id", "created_at_ms"], unique=False)
        batch_op.create_index(
            "ix_request_logs_team_user_created", ["team_id", "svc_user_id", "created_at_ms"], unique=False
        )
