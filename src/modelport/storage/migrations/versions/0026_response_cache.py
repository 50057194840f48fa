"""response cache: team settings, the log row's cache outcome, daily hit counts, the local entries table

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-01 22:00:00

`teams` gains `cache` (off | team | key, default off) and `cache_tool_calls` (default false).
`request_logs` gains `cache` (hit | miss | skip; NULL when the team's cache is off and on rows logged
before) and `cache_saved_micros` (a hit: what the team did not pay). `usage_daily` gains the hit and miss
counts and the money saved, 0 for the days already rolled up. On PostgreSQL a column added to the
partitioned `request_logs` reaches every partition; nullable columns and constant defaults rewrite no table.
`response_cache_entries` holds the cache's entries when no Redis is configured.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, not a batch: a batch on SQLite recreates the table for the expression default
    # (`false()`), and dropping the old `teams` fails its foreign keys once any row refers to a team.
    op.add_column("teams", sa.Column("cache", sa.String(length=8), nullable=False, server_default="off"))
    op.add_column("teams", sa.Column("cache_tool_calls", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cache", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("cache_saved_micros", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("usage_daily", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cache_hits", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("cache_misses", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("cache_saved_micros", sa.BigInteger(), nullable=False, server_default="0"))
    op.create_table(
        "response_cache_entries",
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("entry", sa.LargeBinary(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("used_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "digest", name=op.f("pk_response_cache_entries")),
    )
    op.create_index("ix_response_cache_entries_used_at_ms", "response_cache_entries", ["used_at_ms"])


def downgrade() -> None:
    op.drop_index("ix_response_cache_entries_used_at_ms", table_name="response_cache_entries")
    op.drop_table("response_cache_entries")
    with op.batch_alter_table("usage_daily", schema=None) as batch_op:
        batch_op.drop_column("cache_saved_micros")
        batch_op.drop_column("cache_misses")
        batch_op.drop_column("cache_hits")
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.drop_column("cache_saved_micros")
        batch_op.drop_column("cache")
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_column("cache_tool_calls")
        batch_op.drop_column("cache")
