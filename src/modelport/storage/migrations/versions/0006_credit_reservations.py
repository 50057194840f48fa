"""credit reservations: an owner and a lease for each live reservation

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 15:00:00

A process renews the lease of the reservations it owns; any process's periodic sweep returns what a
reservation with an expired lease still holds (its owner died). The sweep reads this table through its
lease index, never the ledger's history. Holds left outstanding by earlier versions become reservations
with an expired lease here, so the first sweep returns them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "credit_reservations",
        sa.Column("ref", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=False),
        sa.Column("amount_micros", sa.BigInteger(), nullable=False),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=False),
        sa.Column("wanted", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"]),
        sa.PrimaryKeyConstraint("ref"),
    )
    with op.batch_alter_table("credit_reservations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_credit_reservations_lease_until_ms"), ["lease_until_ms"], unique=False)
        batch_op.create_index(batch_op.f("ix_credit_reservations_owner"), ["owner"], unique=False)
        batch_op.create_index(batch_op.f("ix_credit_reservations_team_id"), ["team_id"], unique=False)
    # Outstanding holds of the text gateway from before leases (once, at this upgrade).
    op.execute(
        """
        INSERT INTO credit_reservations (ref, team_id, owner, amount_micros, lease_until_ms, wanted, created_at_ms)
        SELECT h.ref, h.team_id, 'pre-lease', -h.amount_micros, 0, false, h.created_at_ms
        FROM ledger_entries h
        WHERE h.kind = 'hold' AND h.ref IS NOT NULL
          AND -h.amount_micros > COALESCE(
            (SELECT SUM(r.amount_micros) FROM ledger_entries r WHERE r.kind = 'release' AND r.ref = h.ref), 0)
        """
    )


def downgrade() -> None:
    with op.batch_alter_table("credit_reservations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_credit_reservations_team_id"))
        batch_op.drop_index(batch_op.f("ix_credit_reservations_owner"))
        batch_op.drop_index(batch_op.f("ix_credit_reservations_lease_until_ms"))
    op.drop_table("credit_reservations")
