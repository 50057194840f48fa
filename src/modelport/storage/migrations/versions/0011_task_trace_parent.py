"""media tasks: the W3C traceparent of the request that created each task

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 17:20:00

The worker that runs a task (any process, any machine) starts its span under this parent, so a task's
run joins the trace of the request that created it. Nullable: tasks created without a trace have none.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("media_tasks") as batch:
        batch.add_column(sa.Column("trace_parent", sa.String(length=55), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("media_tasks") as batch:
        batch.drop_column("trace_parent")
