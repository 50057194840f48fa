"""request log: cache writes (all, and the 1-hour share) and the price table; daily rollups add them up

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 14:30:00

`request_logs` gains `cache_write_tokens`, `cache_write_1h_tokens` and `price_tier` (NULL on rows logged
before: nothing is guessed for them). `usage_daily` gains the two cache-write sums, 0 for the days already
rolled up. On PostgreSQL a column added to the partitioned `request_logs` reaches every partition; adding a
nullable column or one with a constant default rewrites no table on either database.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cache_write_tokens", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("cache_write_1h_tokens", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("price_tier", sa.String(length=16), nullable=True))
    with op.batch_alter_table("usage_daily", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cache_write_tokens", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("cache_write_1h_tokens", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("usage_daily", schema=None) as batch_op:
        batch_op.drop_column("cache_write_1h_tokens")
        batch_op.drop_column("cache_write_tokens")
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.drop_column("price_tier")
        batch_op.drop_column("cache_write_1h_tokens")
        batch_op.drop_column("cache_write_tokens")
