"""SCIM provisioning: groups, their members, and the users' SCIM fields

Revision ID: 0030
Revises: 0028
Create Date: 2026-12-02 20:00:00

`users` gains `origin` (`scim` for a user SCIM created), `external_id`, `modified_at_ms` and
`scim_deleted_at_ms`, all nullable (no table rewrite; an older revision's insert still works). New tables
`scim_groups` and `scim_group_members`. Plain `add_column` on SQLite: a batch alter would recreate `users`
and its foreign keys.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0028"
branch_labels = None
depends_on = None

_USER_COLUMNS = (
    sa.Column("origin", sa.String(length=16), nullable=True),
    sa.Column("external_id", sa.String(length=200), nullable=True),
    sa.Column("modified_at_ms", sa.BigInteger(), nullable=True),
    sa.Column("scim_deleted_at_ms", sa.BigInteger(), nullable=True),
)


def upgrade() -> None:
    for column in _USER_COLUMNS:
        op.add_column("users", column)
    op.create_table(
        "scim_groups",
        sa.Column("id", sa.String(length=40), primary_key=True),
        sa.Column("display_name", sa.String(length=256), nullable=False),
        sa.Column("display_key", sa.String(length=256), nullable=False, unique=True),
        sa.Column("external_id", sa.String(length=200), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("modified_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "scim_group_members",
        sa.Column(
            "group_id", sa.String(length=40), sa.ForeignKey("scim_groups.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("user_id", sa.String(length=40), sa.ForeignKey("users.id"), primary_key=True),
    )
    op.create_index("ix_scim_group_members_user_id", "scim_group_members", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_scim_group_members_user_id", table_name="scim_group_members")
    op.drop_table("scim_group_members")
    op.drop_table("scim_groups")
    for column in reversed(_USER_COLUMNS):
        with op.batch_alter_table("users") as batch_op:
            batch_op.drop_column(column.name)
