"""operator status index: every team's failed (or cancelled) requests, newest first

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 17:30:00

The operator console's upstream page shows the latest failed requests of every team, and its log page
filters every team's rows by status; without this index a status that is rare (or absent) would scan the
whole log to fill a page.
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_request_logs_status_created_id", "request_logs", ["status", "created_at_ms", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_request_logs_status_created_id", table_name="request_logs")
