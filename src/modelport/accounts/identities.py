"""Provider identities: an OpenID Connect provider's (issuer, subject) signs in as exactly one user (the
unique pair of `identities`). Linking is decided by `accounts.sso`; this module only stores it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit
from modelport.accounts.audit import Actor
from modelport.accounts.tables import identities
from modelport.clock import now_ms
from modelport.errors import Conflict
from modelport.ids import new_id


@dataclass(frozen=True, slots=True)
class Identity:
    id: str
    issuer: str
    subject: str
    user_id: str
    created_at_ms: int


async def user_of(conn: AsyncConnection, issuer: str, subject: str) -> str | None:
    """The user this identity signs in as, or None when it is not linked yet."""
    stmt = select(identities.c.user_id).where(identities.c.issuer == issuer, identities.c.subject == subject)
    value = await conn.scalar(stmt)
    return None if value is None else str(value)


async def link_in(conn: AsyncConnection, issuer: str, subject: str, user_id: str, *, actor: Actor | None) -> None:
    """Link the identity to the user in the caller's transaction; 409 when it is linked already (to anyone:
    a second sign-in racing the first loses here, on the unique pair)."""
    try:
        async with conn.begin_nested():
            await conn.execute(
                insert(identities).values(
                    id=new_id("idn"), issuer=issuer, subject=subject, user_id=user_id, created_at_ms=now_ms()
                )
            )
    except IntegrityError as exc:
        raise Conflict("that identity is linked to an account already") from exc
    after = {"issuer": issuer, "subject": subject}
    await audit.record(conn, actor, "user.identity_link", team_id=None, target=user_id, after=after)


async def identities_of(engine: AsyncEngine, user_id: str) -> list[Identity]:
    stmt = select(identities).where(identities.c.user_id == user_id).order_by(identities.c.created_at_ms)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [Identity(r.id, r.issuer, r.subject, r.user_id, int(r.created_at_ms)) for r in rows]
