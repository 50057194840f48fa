"""Background Responses (`background: true`): `background_responses` and `background_response_events`

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-03 06:30:00

Two new tables, nothing else changes: a background response's row (its request, status, latest response
object, attempt and lease) and the stream events it has produced, replayed to a client that streams it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "background_responses",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("team_id", sa.String(length=64), nullable=False),
        sa.Column("key_id", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("headers", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("attempt", sa.BigInteger(), nullable=False),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_background_responses")),
    )
    op.create_index("ix_background_responses_status", "background_responses", ["status", "lease_until_ms"])
    op.create_index("ix_background_responses_expires_at_ms", "background_responses", ["expires_at_ms"])
    op.create_table(
        "background_response_events",
        sa.Column("response_id", sa.String(length=200), nullable=False),
        sa.Column("sequence_number", sa.BigInteger(), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("response_id", "sequence_number", name=op.f("pk_background_response_events")),
    )


def downgrade() -> None:
    op.drop_table("background_response_events")
    op.drop_index("ix_background_responses_expires_at_ms", table_name="background_responses")
    op.drop_index("ix_background_responses_status", table_name="background_responses")
    op.drop_table("background_responses")
