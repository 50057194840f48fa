"""per-key limits: spend limit and period, model patterns, RPM/TPM, expiry, allowed IPs, role; key spend

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 22:30:00

`api_keys` gains the optional limits of a key (all NULL: no limit beyond the team's) and its role
(`member` for existing keys). `key_spend` holds a limited key's spend and frozen amount per period.
Credit reservations and media tasks remember the key period they hold money in, so a settlement or a
sweep releases it from the right row.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("spend_limit_micros", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("spend_limit_period", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("models", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("rpm", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("tpm", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("expires_at_ms", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("allowed_ips", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("role", sa.String(length=16), nullable=False, server_default="member"))
    op.create_table(
        "key_spend",
        sa.Column("key_id", sa.String(length=40), nullable=False),
        sa.Column("period_start_ms", sa.BigInteger(), nullable=False),
        sa.Column("spent_micros", sa.BigInteger(), nullable=False),
        sa.Column("frozen_micros", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["key_id"], ["api_keys.id"], name=op.f("fk_key_spend_key_id_api_keys")),
        sa.PrimaryKeyConstraint("key_id", "period_start_ms", name=op.f("pk_key_spend")),
    )
    with op.batch_alter_table("credit_reservations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("key_id", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("key_period_ms", sa.BigInteger(), nullable=True))
        batch_op.create_index(batch_op.f("ix_credit_reservations_key_id"), ["key_id"], unique=False)
    with op.batch_alter_table("media_tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("key_id", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("key_period_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("media_tasks", schema=None) as batch_op:
        batch_op.drop_column("key_period_ms")
        batch_op.drop_column("key_id")
    with op.batch_alter_table("credit_reservations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_credit_reservations_key_id"))
        batch_op.drop_column("key_period_ms")
        batch_op.drop_column("key_id")
    op.drop_table("key_spend")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        for name in ("role", "allowed_ips", "expires_at_ms", "tpm", "rpm", "models", "spend_limit_period"):
            batch_op.drop_column(name)
        batch_op.drop_column("spend_limit_micros")
