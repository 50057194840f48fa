"""SCIM users keep what the identity provider sent: userName, name's parts, displayName and emails

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-03 06:30:00

`users` gains `scim_user_name_key` (the lower-cased SCIM userName when it is not the user's email; filters
and uniqueness) and `scim_attributes` (the JSON of userName, name, displayName and emails as last sent, so
they read back as written), both nullable (no table rewrite). Plain `add_column` on SQLite.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("scim_user_name_key", sa.String(length=256), nullable=True))
    op.add_column("users", sa.Column("scim_attributes", sa.JSON(), nullable=True))
    op.create_index("ix_users_scim_user_name_key", "users", ["scim_user_name_key"])


def downgrade() -> None:
    op.drop_index("ix_users_scim_user_name_key", table_name="users")
    for name in ("scim_attributes", "scim_user_name_key"):
        with op.batch_alter_table("users") as batch_op:
            batch_op.drop_column(name)
