"""provider assets

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 14:00:00

Assets a team registered with a provider's asset library (`POST /api/v1/media/providers/{p}/assets`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "provider_assets",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("type", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=255), nullable=True),
        sa.Column("backend", sa.String(length=16), nullable=False),
        sa.Column("upstream_id", sa.String(length=128), nullable=True),
        sa.Column("storage_key", sa.String(length=512), nullable=True),
        sa.Column("mime_type", sa.String(length=128), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("source_url", sa.Text(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], name=op.f("fk_provider_assets_team_id_teams")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_provider_assets")),
    )
    with op.batch_alter_table("provider_assets", schema=None) as batch_op:
        batch_op.create_index("ix_provider_assets_team_created_id", ["team_id", "created_at_ms", "id"], unique=False)
        batch_op.create_index(
            "ix_provider_assets_team_status_created_id", ["team_id", "status", "created_at_ms", "id"], unique=False
        )
        batch_op.create_index("ix_provider_assets_status", ["status"], unique=False)


def downgrade() -> None:
    op.drop_table("provider_assets")
