"""console accounts: users, memberships, invitations, setup and reset links; keys' and sessions' people

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-01 22:00:00

`users` (argon2id password, TOTP, operator role), `memberships` (user, team, role), `invitations` and
`user_links` (setup and reset links, stored as SHA-256). `api_keys` gains `created_by` and `owner_user_id`
(a personal key), `console_sessions` the signed-in `user_id`, `audit_events` the acting user and email.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("email_key", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=True),
        sa.Column("operator_role", sa.String(length=24), nullable=True),
        sa.Column("totp_secret", sa.String(length=64), nullable=True),
        sa.Column("totp_enabled", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("totp_last_step", sa.BigInteger(), nullable=True),
        sa.Column("recovery_codes", sa.JSON(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_sign_in_at_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("email_key", name=op.f("uq_users_email_key")),
    )
    op.create_table(
        "memberships",
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("joined_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], name=op.f("fk_memberships_team_id_teams")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_memberships_user_id_users")),
        sa.PrimaryKeyConstraint("team_id", "user_id", name=op.f("pk_memberships")),
    )
    op.create_index(op.f("ix_memberships_user_id"), "memberships", ["user_id"], unique=False)
    op.create_table(
        "invitations",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_by", sa.String(length=40), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("accepted_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("accepted_by", sa.String(length=40), nullable=True),
        sa.Column("revoked_at_ms", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], name=op.f("fk_invitations_team_id_teams")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invitations")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_invitations_token_hash")),
    )
    op.create_index(op.f("ix_invitations_team_id"), "invitations", ["team_id"], unique=False)
    op.create_table(
        "user_links",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("used_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("revoked_at_ms", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_user_links_user_id_users")),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_user_links")),
    )
    op.create_index(op.f("ix_user_links_user_id"), "user_links", ["user_id"], unique=False)
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("created_by", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("owner_user_id", sa.String(length=40), nullable=True))
        batch_op.create_index(batch_op.f("ix_api_keys_owner_user_id"), ["owner_user_id"], unique=False)
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("user_id", sa.String(length=40), nullable=True))
        batch_op.create_index(batch_op.f("ix_console_sessions_user_id"), ["user_id"], unique=False)
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("actor_user_id", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("actor_email", sa.String(length=320), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_column("actor_email")
        batch_op.drop_column("actor_user_id")
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_console_sessions_user_id"))
        batch_op.drop_column("user_id")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_owner_user_id"))
        batch_op.drop_column("owner_user_id")
        batch_op.drop_column("created_by")
    op.drop_index(op.f("ix_user_links_user_id"), table_name="user_links")
    op.drop_table("user_links")
    op.drop_index(op.f("ix_invitations_team_id"), table_name="invitations")
    op.drop_table("invitations")
    op.drop_index(op.f("ix_memberships_user_id"), table_name="memberships")
    op.drop_table("memberships")
    op.drop_table("users")
