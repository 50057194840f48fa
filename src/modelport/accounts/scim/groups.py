"""SCIM groups and their members. Every change of a user's set of SCIM groups goes through
`_memberships_changed`, in the transaction that makes it: the one place where a group's `displayName`
becomes team roles and operator roles (the role mappings of docs/deploy/sso.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit, role_mappings
from modelport.accounts.audit import Actor
from modelport.accounts.tables import scim_group_members, scim_groups, users
from modelport.clock import now_ms
from modelport.errors import Conflict, InvalidParameters, NotFound
from modelport.ids import new_id

MAX_DISPLAY_NAME = 256
FILTERABLE = ("displayname", "externalid", "id")
SCIM = Actor("scim")  # who changed the mapped memberships: the identity provider's SCIM client


@dataclass(frozen=True, slots=True)
class ScimGroup:
    id: str
    display_name: str
    external_id: str | None
    created_at_ms: int
    modified_at_ms: int
    members: tuple[tuple[str, str], ...]  # (user id, email), by email


async def _memberships_changed(conn: AsyncConnection, user_ids: set[str]) -> None:
    """The users whose set of SCIM groups (`groups_of`) just changed, in the changing transaction: their
    mapped memberships and operator roles follow their groups (`accounts.role_mappings`)."""
    mappings = role_mappings.installed()
    if not mappings:
        return  # no mappings configured: SCIM groups give nothing (and take back nothing)
    for user_id in sorted(user_ids):
        await role_mappings.apply_in(conn, user_id, await groups_of(conn, user_id), mappings=mappings, actor=SCIM)


async def groups_of(conn: AsyncConnection, user_id: str) -> set[str]:
    """The displayNames of the user's SCIM groups: the keys into the role mappings."""
    stmt = (
        select(scim_groups.c.display_name)
        .join(scim_group_members, scim_group_members.c.group_id == scim_groups.c.id)
        .where(scim_group_members.c.user_id == user_id)
    )
    return {r.display_name for r in (await conn.execute(stmt)).all()}


def check_display_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_DISPLAY_NAME or "\x00" in value:
        raise InvalidParameters(f"displayName must be 1-{MAX_DISPLAY_NAME} characters", param="displayName")
    return value.strip()


def filter_clause(attribute: str, value: object) -> ColumnElement[bool]:
    if attribute == "displayname":
        return scim_groups.c.display_key == str(value).lower()
    if attribute == "externalid":
        return scim_groups.c.external_id == str(value)
    return scim_groups.c.id == str(value)


async def _members_in(conn: AsyncConnection, group_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
    stmt = (
        select(scim_group_members.c.group_id, users.c.id, users.c.email)
        .join(users, users.c.id == scim_group_members.c.user_id)
        .where(scim_group_members.c.group_id.in_(group_ids))
        .order_by(users.c.email_key)
    )
    found: dict[str, list[tuple[str, str]]] = {}
    for r in (await conn.execute(stmt)).all():
        found.setdefault(r.group_id, []).append((r.id, r.email))
    return found


def _from_row(row: Row[Any], members: list[tuple[str, str]]) -> ScimGroup:
    m = row._mapping
    return ScimGroup(
        id=m["id"],
        display_name=m["display_name"],
        external_id=m["external_id"],
        created_at_ms=int(m["created_at_ms"]),
        modified_at_ms=int(m["modified_at_ms"]),
        members=tuple(members),
    )


async def get_in(conn: AsyncConnection, group_id: str) -> ScimGroup:
    row = (await conn.execute(select(scim_groups).where(scim_groups.c.id == group_id))).first()
    if row is None:
        raise NotFound(f"no group {group_id!r}")
    return _from_row(row, (await _members_in(conn, [group_id])).get(group_id, []))


async def get(engine: AsyncEngine, group_id: str) -> ScimGroup:
    async with engine.connect() as conn:
        return await get_in(conn, group_id)


async def query(
    engine: AsyncEngine, where: ColumnElement[bool] | None, *, start: int, count: int
) -> tuple[int, list[ScimGroup]]:
    async with engine.connect() as conn:
        counted = select(func.count()).select_from(scim_groups)
        stmt = select(scim_groups).order_by(scim_groups.c.created_at_ms, scim_groups.c.id)
        if where is not None:
            counted, stmt = counted.where(where), stmt.where(where)
        total = int(await conn.scalar(counted) or 0)
        rows = (await conn.execute(stmt.offset(start - 1).limit(count))).all() if count > 0 else []
        members = await _members_in(conn, [r.id for r in rows]) if rows else {}
    return total, [_from_row(r, members.get(r.id, [])) for r in rows]


async def _check_members(conn: AsyncConnection, user_ids: set[str]) -> None:
    """Members must be users SCIM can see (not deleted): a wrong id is the client's mistake, a 400."""
    if not user_ids:
        return
    stmt = select(users.c.id).where(users.c.id.in_(user_ids), users.c.scim_deleted_at_ms.is_(None))
    missing = user_ids - {r.id for r in (await conn.execute(stmt)).all()}
    if missing:
        raise InvalidParameters(f"no user {sorted(missing)[0]!r}", param="members")


async def _member_ids(conn: AsyncConnection, group_id: str) -> set[str]:
    stmt = select(scim_group_members.c.user_id).where(scim_group_members.c.group_id == group_id)
    return {r.user_id for r in (await conn.execute(stmt)).all()}


async def _set_members_in(conn: AsyncConnection, group_id: str, wanted: set[str]) -> set[str]:
    """Make the group's members exactly `wanted`; the users whose group set changed."""
    await _check_members(conn, wanted)
    current = await _member_ids(conn, group_id)
    gone, new = current - wanted, wanted - current
    if gone:
        await conn.execute(
            delete(scim_group_members).where(
                scim_group_members.c.group_id == group_id, scim_group_members.c.user_id.in_(gone)
            )
        )
    if new:
        await conn.execute(insert(scim_group_members), [{"group_id": group_id, "user_id": u} for u in sorted(new)])
    return gone | new


async def create(
    engine: AsyncEngine, display_name: str, *, external_id: str | None, members: set[str], actor: Actor
) -> ScimGroup:
    name = check_display_name(display_name)
    group_id = new_id("grp")
    at = now_ms()
    values = {
        "id": group_id,
        "display_name": name,
        "display_key": name.lower(),
        "external_id": external_id,
        "created_at_ms": at,
        "modified_at_ms": at,
    }
    try:
        async with engine.begin() as conn:
            taken = await conn.scalar(select(scim_groups.c.id).where(scim_groups.c.display_key == name.lower()))
            if taken is not None:
                raise Conflict("a group with that displayName already exists")
            await conn.execute(insert(scim_groups).values(**values))
            changed = await _set_members_in(conn, group_id, members)
            after = {"display_name": name, "external_id": external_id, "members": sorted(members)}
            await audit.record(conn, actor, "scim_group.create", team_id=None, target=group_id, after=after)
            await _memberships_changed(conn, changed)
    except IntegrityError as exc:
        raise Conflict("a group with that displayName already exists") from exc
    return await get(engine, group_id)


async def change(
    engine: AsyncEngine,
    group_id: str,
    *,
    actor: Actor,
    display_name: str | None = None,
    external_id: tuple[str | None] | None = None,
    members: set[str] | None = None,
    add: set[str] | None = None,
    remove: set[str] | None = None,
) -> ScimGroup:
    """Rename, set the externalId (a 1-tuple), set the members, or add and remove some (PUT and PATCH)."""
    async with engine.begin() as conn:
        found = await get_in(conn, group_id)
        values: dict[str, Any] = {"modified_at_ms": now_ms()}
        before: dict[str, Any] = {}
        changed: set[str] = set()
        if display_name is not None:
            name = check_display_name(display_name)
            if name.lower() != found.display_name.lower():
                taken = await conn.scalar(select(scim_groups.c.id).where(scim_groups.c.display_key == name.lower()))
                if taken is not None:
                    raise Conflict("a group with that displayName already exists")
                changed |= await _member_ids(conn, group_id)  # their groups' names changed
            values |= {"display_name": name, "display_key": name.lower()}
            before["display_name"] = found.display_name
        if external_id is not None:
            values["external_id"] = external_id[0]
            before["external_id"] = found.external_id
        wanted = {u for u, _ in found.members} if members is None else set(members)
        wanted = (wanted | (add or set())) - (remove or set())
        changed |= await _set_members_in(conn, group_id, wanted)
        await conn.execute(update(scim_groups).where(scim_groups.c.id == group_id).values(**values))
        after = {k: v for k, v in values.items() if k in before}
        if changed:
            before["members"] = sorted(u for u, _ in found.members)
            after["members"] = sorted(wanted)
        if before:
            await audit.record(
                conn, actor, "scim_group.update", team_id=None, target=group_id, before=before, after=after
            )
        await _memberships_changed(conn, changed)
    return await get(engine, group_id)


async def delete_group(engine: AsyncEngine, group_id: str, *, actor: Actor) -> None:
    async with engine.begin() as conn:
        found = await get_in(conn, group_id)
        members = {u for u, _ in found.members}
        await conn.execute(delete(scim_group_members).where(scim_group_members.c.group_id == group_id))
        await conn.execute(delete(scim_groups).where(scim_groups.c.id == group_id))
        before = {"display_name": found.display_name, "members": sorted(members)}
        await audit.record(conn, actor, "scim_group.delete", team_id=None, target=group_id, before=before)
        await _memberships_changed(conn, members)


async def remove_user_everywhere_in(conn: AsyncConnection, user_id: str) -> list[str]:
    """Take a (deleted) user out of every group, in the caller's transaction; the groups' names."""
    had = sorted(await groups_of(conn, user_id))
    if had:
        await conn.execute(delete(scim_group_members).where(scim_group_members.c.user_id == user_id))
        await _memberships_changed(conn, {user_id})
    return had
