"""operator list indexes: every team's request logs and media tasks, newest first

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 17:20:00

The operator console pages through all teams' rows by (created_at_ms, id); without these indexes each
page would sort the whole table.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_request_logs_created_id", "request_logs", ["created_at_ms", "id"], unique=False)
    op.create_index("ix_media_tasks_created_id", "media_tasks", ["created_at_ms", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_media_tasks_created_id", table_name="media_tasks")
    op.drop_index("ix_request_logs_created_id", table_name="request_logs")
