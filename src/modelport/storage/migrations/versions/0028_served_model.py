"""request log: the model that served a request answered by a fallback model

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-01 22:15:00

`request_logs` gains `served_model`: the catalog id of the model that answered when a fallback served the
request (the requested model stays in `provider`/`model_name`); NULL when the requested model served, and
on rows logged before. On PostgreSQL a column added to the partitioned `request_logs` reaches every
partition; a nullable column rewrites no table on either database.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("served_model", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.drop_column("served_model")
