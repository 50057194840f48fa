"""media_files.task_id: the task a file is a result of (None for uploads)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23 18:05:00

Task results are files of the team but not uploads: the upload quota counts only rows without a task.
Results of tasks that have not expired yet are marked from their task's `resources` (which name each
result's file id), so they stop counting at once.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("media_files", schema=None) as batch_op:
        batch_op.add_column(sa.Column("task_id", sa.String(length=64), nullable=True))
    tasks = sa.table(
        "media_tasks",
        sa.column("id", sa.String),
        sa.column("resources", sa.JSON),
        sa.column("result_expires_at_ms", sa.BigInteger),
    )
    files = sa.table("media_files", sa.column("id", sa.String), sa.column("task_id", sa.String))
    conn = op.get_bind()
    live = conn.execute(
        sa.select(tasks.c.id, tasks.c.resources).where(tasks.c.result_expires_at_ms > int(time.time() * 1000))
    )
    for task_id, resources in live:
        file_ids = [r["file_id"] for r in resources or [] if isinstance(r, dict) and r.get("file_id")]
        if file_ids:
            conn.execute(sa.update(files).where(files.c.id.in_(file_ids)).values(task_id=task_id))


def downgrade() -> None:
    with op.batch_alter_table("media_files", schema=None) as batch_op:
        batch_op.drop_column("task_id")
