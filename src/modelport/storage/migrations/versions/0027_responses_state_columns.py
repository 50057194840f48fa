"""Conversations (`conversations`, `conversation_items`); the request log's `previous_response_id` and `conversation_id`

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-01 22:00:00

`request_logs` gains `previous_response_id` and `conversation_id` (NULL on rows logged before, and on every
request that names neither). On PostgreSQL a column added to the partitioned `request_logs` reaches every
partition; a nullable column rewrites no table on either database. `conversations` holds a team's
conversations (lifetime from the last use in `expires_at_ms`, pruned through its index) and
`conversation_items` their items in order.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("team_id", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("next_position", sa.BigInteger(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "id", name=op.f("pk_conversations")),
    )
    op.create_index("ix_conversations_expires_at_ms", "conversations", ["expires_at_ms"])
    op.create_table(
        "conversation_items",
        sa.Column("team_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=200), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("item", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("team_id", "conversation_id", "position", name=op.f("pk_conversation_items")),
    )
    op.create_index("ix_conversation_items_item_id", "conversation_items", ["team_id", "conversation_id", "id"])
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("previous_response_id", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("conversation_id", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("request_logs", schema=None) as batch_op:
        batch_op.drop_column("conversation_id")
        batch_op.drop_column("previous_response_id")
    op.drop_index("ix_conversation_items_item_id", table_name="conversation_items")
    op.drop_table("conversation_items")
    op.drop_index("ix_conversations_expires_at_ms", table_name="conversations")
    op.drop_table("conversations")
