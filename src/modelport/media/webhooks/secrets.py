"""Per-team webhook signing secrets (`whsec_` + base64 of 32 random bytes, the Standard Webhooks form).

A team's secret is made on first use. Rotation keeps the previous secret signing, as a second signature,
for `previous_secret_seconds` (24 h by default), so receivers can switch without losing deliveries.
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
from modelport.storage.tables import webhook_secrets


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


async def get_or_create(engine: AsyncEngine, team_id: str) -> TeamSecrets:
    for _ in range(2):
        async with engine.connect() as conn:
            row = (await conn.execute(select(webhook_secrets).where(webhook_secrets.c.team_id == team_id))).first()
        if row is not None:
            return TeamSecrets(row.secret, int(row.created_at_ms), row.previous_secret, row.previous_until_ms)
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    insert(webhook_secrets).values(team_id=team_id, secret=new_secret(), created_at_ms=now_ms())
                )
        except IntegrityError:
            pass  # another request made it first; read theirs
    raise RuntimeError("webhook secret could not be created")


async def rotate(
    engine: AsyncEngine, team_id: str, *, previous_valid_ms: int, actor: audit.Actor | None = None
) -> TeamSecrets:
    current = await get_or_create(engine, team_id)
    now = now_ms()
    fresh = new_secret()
    async with engine.begin() as conn:
        await conn.execute(
            update(webhook_secrets)
            .where(webhook_secrets.c.team_id == team_id)
            .values(
                secret=fresh,
                previous_secret=current.secret,
                previous_until_ms=now + previous_valid_ms,
                created_at_ms=now,
            )
        )
        before, after = {"secret": current.secret}, {"secret": fresh}  # masked by audit.record
        await audit.record(
            conn, actor, "webhook_secret.rotate", team_id=team_id, target=team_id, before=before, after=after
        )
    return TeamSecrets(fresh, now, current.secret, now + previous_valid_ms)
