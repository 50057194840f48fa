"""settlement keys: each settlement is applied to the ledger once

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 14:45:00

Settlements are written in batches and, while the database is away, spilled to disk and replayed; the key
of every applied settlement is recorded in the same transaction, so a retry or a replay never charges twice.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "settlement_keys",
        sa.Column("key", sa.String(length=40), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    with op.batch_alter_table("settlement_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_settlement_keys_created_at_ms"), ["created_at_ms"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("settlement_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_settlement_keys_created_at_ms"))
    op.drop_table("settlement_keys")
