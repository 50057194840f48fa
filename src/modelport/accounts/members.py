"""Memberships: a person's role in a team (`owner`, `admin`, `developer`, `viewer`).

A team keeps at least one owner: removing or demoting the last one is a 409. The check runs under the team
row's lock (PostgreSQL `FOR UPDATE`; SQLite serialises writers), so two owners demoting each other at once
cannot leave none. Removing a member ends their console sessions in the team and revokes their personal
keys of the team, in the same transaction (`users.end_person_in`).

Who may change which role is `accounts.permissions.may_grant`, checked by the doors (a person or a key);
the operator may change any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit
from modelport.accounts.audit import Actor
from modelport.accounts.permissions import TEAM_ROLES
from modelport.accounts.tables import memberships, teams, users
from modelport.accounts.users import end_person_in
from modelport.clock import now_ms
from modelport.errors import Conflict, InvalidParameters, NotFound

LAST_OWNER = "a team keeps at least one owner"


@dataclass(frozen=True, slots=True)
class Member:
    user_id: str
    email: str
    name: str | None
    role: str
    joined_at_ms: int
    status: str = "active"

    def to_public(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "email": self.email,
            "name": self.name,
            "role": self.role,
            "joined_at": self.joined_at_ms // 1000,
        }


def check_role(role: Any) -> str:
    if role not in TEAM_ROLES:
        raise InvalidParameters(f"role must be one of {', '.join(TEAM_ROLES)}", param="role")
    return str(role)


def _members_query(team_id: str) -> Any:
    return (
        select(
            memberships.c.user_id,
            users.c.email,
            users.c.name,
            users.c.status,
            memberships.c.role,
            memberships.c.joined_at_ms,
        )
        .join(users, users.c.id == memberships.c.user_id)
        .where(memberships.c.team_id == team_id)
    )


def _member(row: Any) -> Member:
    return Member(row.user_id, row.email, row.name, row.role, int(row.joined_at_ms), row.status)


async def list_members(engine: AsyncEngine, team_id: str) -> list[Member]:
    async with engine.connect() as conn:
        rows = (await conn.execute(_members_query(team_id).order_by(memberships.c.joined_at_ms))).all()
    return [_member(r) for r in rows]


async def member_in(conn: AsyncConnection, team_id: str, user_id: str) -> Member | None:
    row = (await conn.execute(_members_query(team_id).where(memberships.c.user_id == user_id))).first()
    return None if row is None else _member(row)


async def get_member(engine: AsyncEngine, team_id: str, user_id: str) -> Member:
    async with engine.connect() as conn:
        found = await member_in(conn, team_id, user_id)
    if found is None:
        raise NotFound(f"no member {user_id!r} in this team")
    return found


async def add_member_in(conn: AsyncConnection, team_id: str, user_id: str, role: str, *, actor: Actor | None) -> None:
    """Add a membership in the caller's transaction; 409 when the person is already a member."""
    role = check_role(role)
    if await member_in(conn, team_id, user_id) is not None:
        raise Conflict("that person is already a member of this team")
    await conn.execute(insert(memberships).values(team_id=team_id, user_id=user_id, role=role, joined_at_ms=now_ms()))
    await audit.record(conn, actor, "member.add", team_id=team_id, target=user_id, after={"role": role})


async def add_member(engine: AsyncEngine, team_id: str, user_id: str, role: str, *, actor: Actor | None) -> Member:
    async with engine.begin() as conn:
        await add_member_in(conn, team_id, user_id, role, actor=actor)
    return await get_member(engine, team_id, user_id)


async def _lock_team(conn: AsyncConnection, team_id: str) -> None:
    await conn.execute(select(teams.c.id).where(teams.c.id == team_id).with_for_update())


async def _owners(conn: AsyncConnection, team_id: str) -> int:
    stmt = select(func.count()).where(memberships.c.team_id == team_id, memberships.c.role == "owner")
    return int(await conn.scalar(stmt) or 0)


async def set_role(engine: AsyncEngine, team_id: str, user_id: str, role: str, *, actor: Actor | None) -> Member:
    role = check_role(role)
    async with engine.begin() as conn:
        await _lock_team(conn, team_id)
        current = await member_in(conn, team_id, user_id)
        if current is None:
            raise NotFound(f"no member {user_id!r} in this team")
        if current.role == role:
            return current
        if current.role == "owner" and await _owners(conn, team_id) <= 1:
            raise Conflict(LAST_OWNER)
        stmt = update(memberships).where(memberships.c.team_id == team_id, memberships.c.user_id == user_id)
        await conn.execute(stmt.values(role=role))
        before, after = {"role": current.role}, {"role": role}
        await audit.record(conn, actor, "member.role", team_id=team_id, target=user_id, before=before, after=after)
    return await get_member(engine, team_id, user_id)


async def remove_member(engine: AsyncEngine, team_id: str, user_id: str, *, actor: Actor | None) -> Member:
    """Remove a member: their sessions in the team end and their personal keys of the team are revoked, in
    this transaction."""
    async with engine.begin() as conn:
        await _lock_team(conn, team_id)
        current = await member_in(conn, team_id, user_id)
        if current is None:
            raise NotFound(f"no member {user_id!r} in this team")
        if current.role == "owner" and await _owners(conn, team_id) <= 1:
            raise Conflict(LAST_OWNER)
        await conn.execute(
            delete(memberships).where(memberships.c.team_id == team_id, memberships.c.user_id == user_id)
        )
        revoked = await end_person_in(conn, user_id, team_id=team_id)
        after = {"personal_keys_revoked": revoked}
        await audit.record(
            conn, actor, "member.remove", team_id=team_id, target=user_id, before={"role": current.role}, after=after
        )
    return current


async def role_of(engine: AsyncEngine, team_id: str, user_id: str) -> str | None:
    async with engine.connect() as conn:
        value = await conn.scalar(
            select(memberships.c.role).where(memberships.c.team_id == team_id, memberships.c.user_id == user_id)
        )
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class TeamOfPerson:
    id: str
    name: str
    role: str


async def teams_of(engine: AsyncEngine, user_id: str) -> list[TeamOfPerson]:
    """The teams a person belongs to, with their role in each (the console's team switcher)."""
    stmt = (
        select(teams.c.id, teams.c.name, memberships.c.role)
        .join(memberships, memberships.c.team_id == teams.c.id)
        .where(memberships.c.user_id == user_id)
        .order_by(teams.c.name)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [TeamOfPerson(r.id, r.name, r.role) for r in rows]
