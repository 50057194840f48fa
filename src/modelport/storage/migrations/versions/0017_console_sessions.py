"""console_sessions: server-side console sessions (the cookie holds a token, this table its hash)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25 22:30:00

Cookies signed before this revision carry no session token: their holders sign in again once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=True),
        sa.Column("key_id", sa.String(length=40), nullable=True),
        sa.Column("operator", sa.Boolean(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_sessions")),
    )
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_console_sessions_team_id"), ["team_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_console_sessions_key_id"), ["key_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_console_sessions_expires_at_ms"), ["expires_at_ms"], unique=False)


def downgrade() -> None:
    op.drop_table("console_sessions")
