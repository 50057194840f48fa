"""Per-team webhook signing secrets (`whsec_` + base64 of 32 random bytes, the Standard Webhooks form).

A team's secret is made on first use. Rotation keeps the previous secret signing, as a second signature,
for `previous_secret_seconds` (24 h by default), so receivers can switch without losing deliveries.
Both are stored encrypted (`secret_box.py`); every read and write goes through the process's box.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import audit
from modelport.clock import now_ms
from modelport.services import Services
from modelport.webhooks.secret_box import SecretBox, secret_box
from modelport.webhooks.tables import webhook_secrets


def box_of(services: Services) -> SecretBox:
    previous = services.settings.previous_secret_key
    return secret_box(services.secret_key, previous.get_secret_value() if previous else None)


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass(frozen=True, slots=True)
class TeamSecrets:
    secret: str
    created_at_ms: int
    previous_secret: str | None
    previous_until_ms: int | None

    def signing(self, now: int) -> list[str]:
        """The secrets that sign a delivery sent at `now`: the current one, and the previous one while valid."""
        keys = [self.secret]
        if self.previous_secret and self.previous_until_ms and now < self.previous_until_ms:
            keys.append(self.previous_secret)
        return keys


async def get_or_create(engine: AsyncEngine, box: SecretBox, team_id: str) -> TeamSecrets:
    for _ in range(2):
        async with engine.connect() as conn:
            row = (await conn.execute(select(webhook_secrets).where(webhook_secrets.c.team_id == team_id))).first()
        if row is not None:
            previous = box.open(team_id, row.previous_secret) if row.previous_secret else None
            return TeamSecrets(box.open(team_id, row.secret), int(row.created_at_ms), previous, row.previous_until_ms)
        try:
            async with engine.begin() as conn:
                sealed = box.seal(team_id, new_secret())
                await conn.execute(
                    insert(webhook_secrets).values(team_id=team_id, secret=sealed, created_at_ms=now_ms())
                )
        except IntegrityError:
            pass  # another request made it first; read theirs
    raise RuntimeError("webhook secret could not be created")


async def rotate(
    engine: AsyncEngine,
    box: SecretBox,
    team_id: str,
    *,
    previous_valid_ms: int,
    actor: audit.Actor | None = None,
) -> TeamSecrets:
    current = await get_or_create(engine, box, team_id)
    now = now_ms()
    fresh = new_secret()
    async with engine.begin() as conn:
        await conn.execute(
            update(webhook_secrets)
            .where(webhook_secrets.c.team_id == team_id)
            .values(
                secret=box.seal(team_id, fresh),
                previous_secret=box.seal(team_id, current.secret),
                previous_until_ms=now + previous_valid_ms,
                created_at_ms=now,
            )
        )
        before, after = {"secret": current.secret}, {"secret": fresh}  # masked by audit.record
        await audit.record(
            conn, actor, "webhook_secret.rotate", team_id=team_id, target=team_id, before=before, after=after
        )
    return TeamSecrets(fresh, now, current.secret, now + previous_valid_ms)


async def reseal_all(engine: AsyncEngine, box: SecretBox) -> int:
    """Seal every secret stored in plain text (rows from before encryption at rest) or under the previous
    secret key, with the current key; returns the rows changed. Run by `serve` at start-up."""
    async with engine.connect() as conn:
        rows = (await conn.execute(select(webhook_secrets))).all()
    changed = 0
    for row in rows:
        values: dict[str, str] = {}
        if not box.is_current(row.team_id, row.secret):
            values["secret"] = box.seal(row.team_id, box.open(row.team_id, row.secret))
        if row.previous_secret and not box.is_current(row.team_id, row.previous_secret):
            values["previous_secret"] = box.seal(row.team_id, box.open(row.team_id, row.previous_secret))
        if values:
            # Only if the row is still what was read: a rotation meanwhile wrote sealed values already.
            stmt = update(webhook_secrets).where(
                webhook_secrets.c.team_id == row.team_id, webhook_secrets.c.secret == row.secret
            )
            async with engine.begin() as conn:
                changed += (await conn.execute(stmt.values(**values))).rowcount or 0
    return changed
