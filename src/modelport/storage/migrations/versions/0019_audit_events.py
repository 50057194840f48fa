"""audit log: audit_events

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-25 23:45:00

`audit_events`: one append-only row per change an operator or a team admin makes (key create/update/revoke,
top-up, tier, suspension, team flags, webhook secret rotation, catalog edits: `team_id` null), written in the
change's own transaction.
Indexed by time (retention pruning, since/until) and by (team, id) for a team's own pages.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=True),
        sa.Column("actor_kind", sa.String(length=24), nullable=False),
        sa.Column("actor_key_id", sa.String(length=40), nullable=True),
        sa.Column("action", sa.String(length=48), nullable=False),
        sa.Column("target", sa.String(length=120), nullable=False),
        sa.Column("before", sa.Text(), nullable=True),
        sa.Column("after", sa.Text(), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("client", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index("ix_audit_events_at_ms", "audit_events", ["at_ms"], unique=False)
    op.create_index("ix_audit_events_team_id_id", "audit_events", ["team_id", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_audit_events_team_id_id", table_name="audit_events")
    op.drop_index("ix_audit_events_at_ms", table_name="audit_events")
    op.drop_table("audit_events")
