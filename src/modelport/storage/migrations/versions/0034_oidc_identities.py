"""OpenID Connect sign-in: provider identities and the grants the role mappings made

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-03 06:30:00

New tables only: `identities` (issuer + subject → one user, unique) and `mapped_grants` (the memberships and
operator roles that came from ROLE_MAPPINGS, so group changes take back only those).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "identities",
        sa.Column("id", sa.String(length=40), primary_key=True),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=40), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("issuer", "subject", name="uq_identities_issuer_subject"),
    )
    op.create_index("ix_identities_user_id", "identities", ["user_id"])
    op.create_table(
        "mapped_grants",
        sa.Column("user_id", sa.String(length=40), sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("scope", sa.String(length=40), primary_key=True),
        sa.Column("role", sa.String(length=24), nullable=False),
        sa.Column("granted_at_ms", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("mapped_grants")
    op.drop_index("ix_identities_user_id", table_name="identities")
    op.drop_table("identities")
