"""ledger day totals: entries and amount per team, UTC day and kind

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 17:30:00

The console's billing totals read `ledger_daily`, bumped in the same transaction as every ledger entry
(`billing/daily.py`), instead of summing up to millions of entries; the covering index 0008 added for
that summing goes (it cost every ledger insert and was still too slow at a million entries).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ledger_daily",
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("day", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("entries", sa.BigInteger(), nullable=False),
        sa.Column("amount_micros", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "day", "kind", name=op.f("pk_ledger_daily")),
    )
    # Entries written before this revision: totalled once, so the totals agree with the ledger from the start.
    op.execute(
        "INSERT INTO ledger_daily (team_id, day, kind, entries, amount_micros) "
        "SELECT team_id, created_at_ms / 86400000, kind, count(*), sum(amount_micros) FROM ledger_entries "
        "GROUP BY team_id, created_at_ms / 86400000, kind"
    )
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_ledger_entries_team_created")


def downgrade() -> None:
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_ledger_entries_team_created", ["team_id", "created_at_ms", "kind", "amount_micros"], unique=False
        )
    op.drop_table("ledger_daily")
