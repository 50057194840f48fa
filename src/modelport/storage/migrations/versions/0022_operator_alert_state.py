"""operator alerts: operator_alert_state

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26 01:40:00

`operator_alert_state`: the state each operator alert last reported (a deployment down, the task backlog,
low storage), one row per alert key. Every process compares-and-sets it in the transaction that writes the
event to the webhook outbox, so a change is sent once however many processes see it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operator_alert_state",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("alerting", sa.Boolean(), nullable=False),
        sa.Column("changed_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_operator_alert_state")),
    )


def downgrade() -> None:
    op.drop_table("operator_alert_state")
