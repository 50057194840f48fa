"""TOTP secrets at rest: `users.totp_secret` holds `mpts1.` + the base32 secret sealed by the service's
secret box (`modelport/secret_box.py`) under its own derived key (label `modelport:totp-secrets:v1`), with
the user id as associated data. A database copy alone gives nobody the codes of a person's second factor.

Rows from before (migration 0033) hold the plain base32 text: read as they are (base32 has no `.`, so the
forms cannot be confused) and sealed by the next `serve` start (`reseal_all`), as are secrets sealed under
the previous secret key after a rotation (docs/security.md, Rotating the secret key).
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.tables import users
from modelport.secret_box import Purpose, SecretBox

TOTP_SECRETS = Purpose(label="modelport:totp-secrets:v1", prefix="mpts1.", noun="TOTP secret")


def seal(box: SecretBox, user_id: str, secret: str) -> str:
    return box.seal(user_id, secret.encode("ascii"))


def open_secret(box: SecretBox, user_id: str, stored: str) -> str:
    """The base32 secret of a stored value (sealed, or plain from before encryption at rest)."""
    if not box.is_sealed(stored):
        return stored
    return box.open(user_id, stored)[0].decode("ascii")


def _needs_sealing(box: SecretBox, user_id: str, stored: str) -> bool:
    return not box.is_sealed(stored) or not box.open(user_id, stored)[1]


async def reseal_all(engine: AsyncEngine, box: SecretBox) -> int:
    """Seal every TOTP secret stored in plain text or under the previous secret key with the current key;
    returns the rows changed. Run by `serve` at start-up."""
    stmt = select(users.c.id, users.c.totp_secret).where(users.c.totp_secret.is_not(None))
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    changed = 0
    for row in rows:
        if not _needs_sealing(box, row.id, row.totp_secret):
            continue
        sealed = seal(box, row.id, open_secret(box, row.id, row.totp_secret))
        # Only if the row still holds what was read: an enrolment meanwhile wrote a sealed secret already.
        guarded = update(users).where(users.c.id == row.id, users.c.totp_secret == row.totp_secret)
        async with engine.begin() as conn:
            changed += (await conn.execute(guarded.values(totp_secret=sealed))).rowcount or 0
    return changed
