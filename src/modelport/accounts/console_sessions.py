"""Console sessions on the server: one row per signed-in browser, so a session can be ended everywhere.

The console's signed cookie carries a random token; the table holds only its SHA-256 (a database reader
cannot sign in with what it sees). A session is valid while its row exists, has not reached its absolute
expiry and, for a team, its key is active and its team not suspended (checked in the same read, so a
revocation by any path ends the session at the next request of every process). Ending a session deletes
its row: sign-out one, key revocation and suspension (`accounts.service`) those of the key or team, an
operator all of a team's.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts.tables import api_keys, console_sessions, memberships, teams, users
from modelport.clock import now_ms


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def start(
    engine: AsyncEngine,
    *,
    lifetime_ms: int,
    team_id: str | None = None,
    key_id: str | None = None,
    user_id: str | None = None,
) -> str:
    """A new session (a person's when `user_id` is given, else an admin-token operator's when no team is);
    returns the token for the cookie. Rows past their expiry are removed here, so the table holds only live
    sessions and a few stale ones."""
    token = secrets.token_urlsafe(32)
    now = now_ms()
    async with engine.begin() as conn:
        await conn.execute(delete(console_sessions).where(console_sessions.c.expires_at_ms <= now))
        await conn.execute(
            insert(console_sessions).values(
                id=_digest(token),
                team_id=team_id,
                key_id=key_id,
                user_id=user_id,
                operator=team_id is None and user_id is None,
                created_at_ms=now,
                expires_at_ms=now + lifetime_ms,
            )
        )
    return token


async def team_session_valid(engine: AsyncEngine, token: str, *, team_id: str, key_id: str) -> bool:
    """The team session of `token` exists, is not expired, and its key and team may still sign in."""
    stmt = (
        select(console_sessions.c.id)
        .join(api_keys, api_keys.c.id == console_sessions.c.key_id)
        .join(teams, teams.c.id == api_keys.c.team_id)
        .where(
            console_sessions.c.id == _digest(token),
            console_sessions.c.team_id == team_id,
            console_sessions.c.key_id == key_id,
            console_sessions.c.expires_at_ms > now_ms(),
            api_keys.c.team_id == team_id,
            api_keys.c.revoked_at_ms.is_(None),
            teams.c.suspended_at_ms.is_(None),
        )
    )
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).first() is not None


async def operator_session_valid(engine: AsyncEngine, token: str) -> bool:
    stmt = select(console_sessions.c.id).where(
        console_sessions.c.id == _digest(token),
        console_sessions.c.operator.is_(True),
        console_sessions.c.expires_at_ms > now_ms(),
    )
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).first() is not None


async def end(engine: AsyncEngine, token: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(delete(console_sessions).where(console_sessions.c.id == _digest(token)))


async def end_for_team(conn: AsyncConnection, team_id: str) -> int:
    """End every console session of a team (in the caller's transaction); returns how many there were."""
    result = await conn.execute(delete(console_sessions).where(console_sessions.c.team_id == team_id))
    return int(result.rowcount or 0)


async def end_for_key(conn: AsyncConnection, key_id: str) -> int:
    result = await conn.execute(delete(console_sessions).where(console_sessions.c.key_id == key_id))
    return int(result.rowcount or 0)


async def count_for_team(engine: AsyncEngine, team_id: str) -> int:
    """Live console sessions of a team (the operator console shows it beside the button that ends them)."""
    stmt = select(func.count()).where(
        console_sessions.c.team_id == team_id, console_sessions.c.expires_at_ms > now_ms()
    )
    async with engine.connect() as conn:
        return int(await conn.scalar(stmt) or 0)


@dataclass(frozen=True, slots=True)
class PersonSession:
    """What a person's live session may do now: read at every request, never cached."""

    user_id: str
    email: str
    name: str | None
    operator_role: str | None
    team_id: str | None  # the team the session is in (None: the person has chosen none, or has none)
    team_role: str | None  # their role there; None when they are no longer a member
    team_suspended: bool


async def person_session(engine: AsyncEngine, token: str, *, user_id: str) -> PersonSession | None:
    """The person's session of `token` if it exists, has not expired and the account is active; with the
    person's role in the session's team (None once they are no longer a member)."""
    c = console_sessions.c
    stmt = (
        select(
            users.c.email, users.c.name, users.c.operator_role, c.team_id, memberships.c.role, teams.c.suspended_at_ms
        )
        .select_from(
            console_sessions.join(users, users.c.id == c.user_id)
            .outerjoin(memberships, and_(memberships.c.user_id == c.user_id, memberships.c.team_id == c.team_id))
            .outerjoin(teams, teams.c.id == c.team_id)
        )
        .where(c.id == _digest(token), c.user_id == user_id, c.expires_at_ms > now_ms(), users.c.status == "active")
    )
    async with engine.connect() as conn:
        row = (await conn.execute(stmt)).first()
    if row is None:
        return None
    return PersonSession(
        user_id, row.email, row.name, row.operator_role, row.team_id, row.role, row.suspended_at_ms is not None
    )


async def switch_team(engine: AsyncEngine, token: str, team_id: str | None) -> None:
    """Move a person's session to another of their teams (the team switcher)."""
    async with engine.begin() as conn:
        await conn.execute(
            update(console_sessions).where(console_sessions.c.id == _digest(token)).values(team_id=team_id)
        )


@dataclass(frozen=True, slots=True)
class SessionRow:
    digest: str
    created_at_ms: int
    expires_at_ms: int


async def person_sessions(engine: AsyncEngine, user_id: str) -> list[SessionRow]:
    """A person's live sessions, newest first (the profile page)."""
    stmt = (
        select(console_sessions.c.id, console_sessions.c.created_at_ms, console_sessions.c.expires_at_ms)
        .where(console_sessions.c.user_id == user_id, console_sessions.c.expires_at_ms > now_ms())
        .order_by(console_sessions.c.created_at_ms.desc())
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [SessionRow(r.id, int(r.created_at_ms), int(r.expires_at_ms)) for r in rows]


def token_digest(token: str) -> str:
    return _digest(token)
