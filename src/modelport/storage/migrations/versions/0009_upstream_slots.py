"""upstream media provider slots: the per-provider concurrency limit shared by every worker process

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 17:20:00

One row per provider and slot number, created on first use. A task running against a hosted media provider
holds one slot (compare-and-swap on a free or expired row), renews it with its task lease and frees it when
its call ends; a killed worker's slot frees itself when its lease runs out.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "upstream_slots",
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("provider", "slot"),
    )


def downgrade() -> None:
    op.drop_table("upstream_slots")
