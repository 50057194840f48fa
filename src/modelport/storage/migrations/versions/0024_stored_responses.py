"""Stored Responses: `stored_responses`, per team, for previous_response_id and the retrieval routes

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 18:30:00

A `POST /v1/responses` with `store` true keeps its response object and input items (JSON text) until
`expires_at_ms`; the retention pruner removes expired rows through `ix_stored_responses_expires_at_ms`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stored_responses",
        sa.Column("team_id", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("previous_id", sa.String(length=200), nullable=True),
        sa.Column("input_items", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "id", name=op.f("pk_stored_responses")),
    )
    op.create_index("ix_stored_responses_expires_at_ms", "stored_responses", ["expires_at_ms"])


def downgrade() -> None:
    op.drop_index("ix_stored_responses_expires_at_ms", table_name="stored_responses")
    op.drop_table("stored_responses")
