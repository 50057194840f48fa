"""Teams and API keys: the operations behind the admin CLI, the admin API and auth."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit, console_sessions
from modelport.accounts.audit import Actor
from modelport.accounts.key_fields import check_key_fields
from modelport.accounts.keys import generate_key, hash_key, visible_prefix
from modelport.accounts.limits import limits_from_columns
from modelport.accounts.models import ApiKey, CreatedKey, Team
from modelport.accounts.tables import api_keys, memberships, teams
from modelport.accounts.users import OWNER_DISABLED, REVOKED
from modelport.clock import now_ms
from modelport.errors import Conflict, InvalidParameters, NotFound
from modelport.ids import new_id

TEAM_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def team_from_row(row: Row[Any]) -> Team:
    m = row._mapping
    return Team(
        id=m["id"],
        name=m["name"],
        balance_micros=int(m["balance_micros"]),
        frozen_micros=int(m["frozen_micros"]),
        tier=m["tier"],
        asset_service=bool(m["asset_service"]),
        log_retention=bool(m["log_retention"]),
        created_at_ms=int(m["created_at_ms"]),
        suspended_at_ms=None if m["suspended_at_ms"] is None else int(m["suspended_at_ms"]),
        log_days=None if m["log_days"] is None else float(m["log_days"]),
        cache=m["cache"] or "off",
        cache_tool_calls=bool(m["cache_tool_calls"]),
    )


def key_from_row(row: Row[Any]) -> ApiKey:
    m = row._mapping
    return ApiKey(
        id=m["id"],
        team_id=m["team_id"],
        name=m["name"],
        prefix=m["prefix"],
        created_at_ms=int(m["created_at_ms"]),
        revoked_at_ms=m["revoked_at_ms"],
        last_used_at_ms=m["last_used_at_ms"],
        limits=limits_from_columns(m),
        role=m["role"] or "member",
        created_by=m["created_by"],
        owner_user_id=m["owner_user_id"],
    )


async def create_team(engine: AsyncEngine, name: str, *, tier: str, actor: Actor | None = None) -> Team:
    if not TEAM_NAME_RE.match(name):
        raise InvalidParameters(
            "team name must be 1-100 characters: letters, digits, '_', '.', '-', starting with a letter or digit",
            param="name",
        )
    team_id = new_id("team")
    values = {
        "id": team_id,
        "name": name,
        "balance_micros": 0,
        "frozen_micros": 0,
        "tier": tier,
        "asset_service": False,
        "log_retention": False,
        "created_at_ms": now_ms(),
    }
    try:
        async with engine.begin() as conn:
            await conn.execute(insert(teams).values(**values))
            after = {"name": name, "tier": tier}
            await audit.record(conn, actor, "team.create", team_id=team_id, target=team_id, after=after)
    except IntegrityError as exc:
        raise Conflict(f"a team named {name!r} already exists") from exc
    return await get_team(engine, team_id)


async def find_team(conn: AsyncConnection, ref: str) -> Team | None:
    row = (await conn.execute(select(teams).where(or_(teams.c.id == ref, teams.c.name == ref)))).first()
    return None if row is None else team_from_row(row)


async def get_team(engine: AsyncEngine, ref: str) -> Team:
    async with engine.connect() as conn:
        team = await find_team(conn, ref)
    if team is None:
        raise NotFound(f"no team {ref!r}")
    return team


async def set_suspended(engine: AsyncEngine, ref: str, suspended: bool, *, actor: Actor | None = None) -> Team:
    """Suspend a team (its keys are refused on both hosts) or lift the suspension; repeating either is a no-op
    (and records no event)."""
    team = await get_team(engine, ref)
    async with engine.begin() as conn:
        if suspended:
            stmt = update(teams).where(teams.c.id == team.id, teams.c.suspended_at_ms.is_(None))
            result = await conn.execute(stmt.values(suspended_at_ms=now_ms()))
            await console_sessions.end_for_team(conn, team.id)  # ended, not merely paused: gone on unsuspend too
        else:
            stmt = update(teams).where(teams.c.id == team.id, teams.c.suspended_at_ms.is_not(None))
            result = await conn.execute(stmt.values(suspended_at_ms=None))
        if result.rowcount:
            action = "team.suspend" if suspended else "team.unsuspend"
            before, after = {"suspended": not suspended}, {"suspended": suspended}
            await audit.record(conn, actor, action, team_id=team.id, target=team.id, before=before, after=after)
    return await get_team(engine, team.id)


async def list_teams(engine: AsyncEngine) -> list[Team]:
    async with engine.connect() as conn:
        rows = (await conn.execute(select(teams).order_by(teams.c.created_at_ms, teams.c.id))).all()
    return [team_from_row(r) for r in rows]


async def update_team(engine: AsyncEngine, ref: str, *, actor: Actor | None = None, **changes: Any) -> Team:
    """Set plain team columns (tier, asset_service, log_retention, log_days); `team.tier`, `team.log_days`
    (the team's own request-log window) or `team.flags` in the audit."""
    allowed = {"tier", "asset_service", "log_retention", "log_days", "cache", "cache_tool_calls"}
    unknown = set(changes) - allowed
    if unknown:
        raise InvalidParameters(f"unknown team fields: {', '.join(sorted(unknown))}")
    team = await get_team(engine, ref)
    if changes:
        async with engine.begin() as conn:
            current = await find_team(conn, team.id)
            assert current is not None  # teams are never deleted
            before = {name: getattr(current, name) for name in changes}
            await conn.execute(update(teams).where(teams.c.id == team.id).values(**changes))
            if before != changes:  # the same values again are not a change
                only = next(iter(changes)) if len(changes) == 1 else None
                action = {"tier": "team.tier", "log_days": "team.log_days"}.get(only or "", "team.flags")
                await audit.record(conn, actor, action, team_id=team.id, target=team.id, before=before, after=changes)
    return await get_team(engine, team.id)


async def raise_tier_in(conn: AsyncConnection, team_id: str, tier: str, *, lower: list[str]) -> bool:
    """Set the team's tier to `tier` only if it is one of `lower`, in the caller's transaction (a top-up's:
    only ever moves up, and the WHERE keeps a concurrent larger top-up's tier); whether it changed."""
    result = await conn.execute(update(teams).where(teams.c.id == team_id, teams.c.tier.in_(lower)).values(tier=tier))
    return result.rowcount > 0


async def create_key(
    engine: AsyncEngine,
    team_ref: str,
    *,
    name: str | None = None,
    fields: dict[str, Any] | None = None,
    actor: Actor | None = None,
    created_by: str | None = None,
    owner_user_id: str | None = None,
) -> CreatedKey:
    """A new key of the team; `fields` are its limits and role by their public names (`check_key_fields`).
    `owner_user_id` makes it a personal key of that member (it stops working when they leave)."""
    columns = check_key_fields(fields or {})
    team = await get_team(engine, team_ref)
    if owner_user_id is not None:
        async with engine.connect() as conn:
            member = await conn.scalar(
                select(memberships.c.role).where(
                    memberships.c.team_id == team.id, memberships.c.user_id == owner_user_id
                )
            )
        if member is None:
            raise InvalidParameters("a personal key's owner must be a member of the team", param="owner_user_id")
    key = generate_key()
    key_id = new_id("key")
    values = {
        **columns,
        "id": key_id,
        "team_id": team.id,
        "name": name if name is not None else columns.get("name"),
        "prefix": visible_prefix(key),
        "key_hash": hash_key(key),
        "created_at_ms": now_ms(),
        "revoked_at_ms": None,
        "last_used_at_ms": None,
        "created_by": created_by,
        "owner_user_id": owner_user_id,
    }
    async with engine.begin() as conn:
        await conn.execute(insert(api_keys).values(**values))
        after = (await _key_in(conn, key_id)).to_public()
        await audit.record(conn, actor, "key.create", team_id=team.id, target=key_id, after=after)
    return CreatedKey(key=key, record=await get_key(engine, key_id))


async def _key_in(conn: AsyncConnection, key_id: str) -> ApiKey:
    row = (await conn.execute(select(api_keys).where(api_keys.c.id == key_id))).first()
    if row is None:
        raise NotFound(f"no key {key_id!r}")
    return key_from_row(row)


async def get_key(engine: AsyncEngine, key_id: str) -> ApiKey:
    async with engine.connect() as conn:
        row = (await conn.execute(select(api_keys).where(api_keys.c.id == key_id))).first()
    if row is None:
        raise NotFound(f"no key {key_id!r}")
    return key_from_row(row)


async def update_key(engine: AsyncEngine, key_id: str, fields: dict[str, Any], *, actor: Actor | None = None) -> ApiKey:
    """Change a key's name, limits or role (public names; None clears a limit). A revoked key stays revoked."""
    columns = check_key_fields(fields)
    await get_key(engine, key_id)
    if columns:
        async with engine.begin() as conn:
            before = await _key_in(conn, key_id)
            await conn.execute(update(api_keys).where(api_keys.c.id == key_id).values(**columns))
            after = await _key_in(conn, key_id)
            await _record_key(conn, actor, "key.update", before, after)
    return await get_key(engine, key_id)


async def revoke_key(engine: AsyncEngine, key_id: str, *, actor: Actor | None = None) -> ApiKey:
    """Revoke a key (for good: `stopped_reason` `revoked`); revoking a revoked key is a no-op (and records no
    event), except that a personal key stopped by its owner's disabling no longer comes back on enabling."""
    await get_key(engine, key_id)
    async with engine.begin() as conn:
        before = await _key_in(conn, key_id)
        result = await conn.execute(
            update(api_keys)
            .where(api_keys.c.id == key_id, api_keys.c.revoked_at_ms.is_(None))
            .values(revoked_at_ms=now_ms(), stopped_reason=REVOKED)
        )
        await console_sessions.end_for_key(conn, key_id)
        if result.rowcount:
            await _record_key(conn, actor, "key.revoke", before, await _key_in(conn, key_id))
        else:
            paused = api_keys.c.stopped_reason == OWNER_DISABLED
            kept = await conn.execute(
                update(api_keys).where(api_keys.c.id == key_id, paused).values(stopped_reason=REVOKED)
            )
            if kept.rowcount:
                await audit.record(
                    conn,
                    actor,
                    "key.revoke",
                    team_id=before.team_id,
                    target=key_id,
                    before={"stopped_reason": OWNER_DISABLED},
                    after={"stopped_reason": REVOKED},
                )
    return await get_key(engine, key_id)


async def _record_key(conn: AsyncConnection, actor: Actor | None, action: str, before: ApiKey, after: ApiKey) -> None:
    """The key's public fields that changed, before and after (usage times are not changes); none: no event."""
    old, new = before.to_public(), after.to_public()
    changed = [k for k in new if old.get(k) != new[k] and k != "last_used_at"]
    if not changed:
        return  # the same values again: not a change
    await audit.record(
        conn,
        actor,
        action,
        team_id=after.team_id,
        target=after.id,
        before={k: old.get(k) for k in changed},
        after={k: new[k] for k in changed},
    )


async def list_keys(engine: AsyncEngine, team_ref: str) -> Sequence[ApiKey]:
    team = await get_team(engine, team_ref)
    async with engine.connect() as conn:
        rows = (
            await conn.execute(select(api_keys).where(api_keys.c.team_id == team.id).order_by(api_keys.c.created_at_ms))
        ).all()
    return [key_from_row(r) for r in rows]


async def lookup_key(engine: AsyncEngine, key: str) -> tuple[ApiKey, Team] | None:
    """The key's record and team, or None if no such key exists (revoked keys are returned, marked)."""
    stmt = (
        select(api_keys, teams.c.name.label("team_name"))
        .join(teams, teams.c.id == api_keys.c.team_id)
        .where(api_keys.c.key_hash == hash_key(key))
    )
    async with engine.connect() as conn:
        row = (await conn.execute(stmt)).first()
        if row is None:
            return None
        record = key_from_row(row)
        team = await find_team(conn, record.team_id)
    assert team is not None  # FK guarantees it
    return record, team


async def lookup_key_id(engine: AsyncEngine, key_id: str) -> tuple[ApiKey, Team] | None:
    """The key's record and team by key id (the console's session holds the id, never the key)."""
    async with engine.connect() as conn:
        row = (await conn.execute(select(api_keys).where(api_keys.c.id == key_id))).first()
        if row is None:
            return None
        record = key_from_row(row)
        team = await find_team(conn, record.team_id)
    assert team is not None  # FK guarantees it
    return record, team


async def touch_key(engine: AsyncEngine, key_id: str, at_ms: int) -> None:
    async with engine.begin() as conn:
        await conn.execute(update(api_keys).where(api_keys.c.id == key_id).values(last_used_at_ms=at_ms))


async def list_personal_keys(engine: AsyncEngine, user_id: str) -> Sequence[ApiKey]:
    """A person's own keys in every team (their profile page)."""
    stmt = select(api_keys).where(api_keys.c.owner_user_id == user_id).order_by(api_keys.c.created_at_ms)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [key_from_row(r) for r in rows]
