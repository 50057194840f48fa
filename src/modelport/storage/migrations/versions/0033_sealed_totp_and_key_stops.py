"""sealed TOTP secrets; why a key stopped

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-03 06:30:00

`users.totp_secret` widens from 64 to 200 characters: it now holds the secret sealed by the service's
secret box (`mpts1.` + base64url of nonce, ciphertext and tag, ~86 characters; accounts/totp_secrets.py).
Existing plain secrets are sealed by the next `serve` start, which has the secret key (a migration does
not). On SQLite the column is replaced by plain ALTERs (rename, add, copy, drop: SQLite 3.35+), not a
batch alter, which would recreate `users` under the foreign keys that point at it.

`api_keys` gains `stopped_reason` (nullable, no table rewrite): why a revoked key stopped. `owner_disabled`:
its owner was disabled, and enabling them brings it back; `owner_left`: its owner left the team;
`revoked`: a person or the operator revoked it. NULL on keys revoked before (they stay revoked).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def _sqlite_retype(width: int) -> None:
    op.execute("ALTER TABLE users RENAME COLUMN totp_secret TO totp_secret_old")
    op.add_column("users", sa.Column("totp_secret", sa.String(length=width), nullable=True))
    op.execute("UPDATE users SET totp_secret = totp_secret_old")
    op.execute("ALTER TABLE users DROP COLUMN totp_secret_old")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("users", "totp_secret", existing_type=sa.String(length=64), type_=sa.String(length=200))
    else:
        _sqlite_retype(200)
    op.add_column("api_keys", sa.Column("stopped_reason", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.drop_column("stopped_reason")
    # Sealed secrets do not fit the old width (and the old code would not open them): a downgrade turns
    # second factors off (sign-in asks for the password only; the person enrols again).
    op.execute("UPDATE users SET totp_secret = NULL, totp_enabled = false WHERE length(totp_secret) > 64")
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("users", "totp_secret", existing_type=sa.String(length=200), type_=sa.String(length=64))
    else:
        _sqlite_retype(64)
