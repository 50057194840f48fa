"""Users as SCIM provisions them. Creating goes through `users.create_user_in`, and activating, deactivating
and renaming through `users.update_user` (so deactivating ends the person's console sessions and stops their
personal keys exactly as an operator's disabling does); this module adds the SCIM fields beside them. A
SCIM delete disables the user and hides it from SCIM; operators still see it, disabled (the audit trail)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit
from modelport.accounts.audit import Actor
from modelport.accounts.scim import groups
from modelport.accounts.tables import users
from modelport.accounts.users import check_email, check_name, create_user_in, email_key, not_placeholder, update_user
from modelport.clock import now_ms
from modelport.errors import Conflict, NotFound

# The attributes a SCIM `eq` filter may name on users, lower-cased (RFC 7643: attribute names are
# case-insensitive); userName and emails are compared case-insensitively, as email addresses.
FILTERABLE = ("username", "externalid", "emails.value", "emails", "id", "active")


@dataclass(frozen=True, slots=True)
class ScimUser:
    id: str
    email: str
    name: str | None
    active: bool
    external_id: str | None
    created_at_ms: int
    modified_at_ms: int
    # userName, name, displayName and emails as SCIM last sent them (None: never sent by SCIM)
    attributes: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class UserFields:
    """What a SCIM create or replace sets: the account's email and name, derived from the SCIM attributes
    (`attributes`, kept as sent; `user_name` is their userName)."""

    email: str
    name: str | None = None
    active: bool = True
    external_id: str | None = None
    user_name: str | None = None
    attributes: dict[str, Any] | None = None


def _from_row(row: Row[Any]) -> ScimUser:
    m = row._mapping
    created = int(m["created_at_ms"])
    return ScimUser(
        id=m["id"],
        email=m["email"],
        name=m["name"],
        active=m["status"] == "active",
        external_id=m["external_id"],
        created_at_ms=created,
        modified_at_ms=int(m["modified_at_ms"] or created),
        attributes=m["scim_attributes"] if isinstance(m["scim_attributes"], dict) else None,
    )


# not deleted through SCIM, and not the first operator's placeholder before its setup (no one yet)
_LIVE = users.c.scim_deleted_at_ms.is_(None) & not_placeholder()
# a user's SCIM userName, compared case-insensitively: the one SCIM sent, else the email
_user_name_key = func.coalesce(users.c.scim_user_name_key, users.c.email_key)


def _user_name_key_of(user_name: str | None, email: str) -> str | None:
    """The `scim_user_name_key` column: NULL when the userName is the email (the email_key answers)."""
    if user_name is None or email_key(user_name) == email_key(email):
        return None
    return user_name.strip().lower()


async def _check_email_free(conn: AsyncConnection, key: str) -> None:
    if await conn.scalar(select(users.c.id).where(users.c.email_key == key)) is not None:
        raise Conflict("a user with that email address already exists")


async def _check_user_name_free(conn: AsyncConnection, user_name: str | None, user_id: str | None) -> None:
    if user_name is None:
        return
    stmt = select(users.c.id).where(_user_name_key == user_name.strip().lower(), _LIVE)
    if user_id is not None:
        stmt = stmt.where(users.c.id != user_id)
    if await conn.scalar(stmt.limit(1)) is not None:
        raise Conflict("a user with that userName already exists")


def filter_clause(attribute: str, value: object) -> ColumnElement[bool]:
    """The WHERE clause of `attribute eq value` (attribute one of FILTERABLE, lower-cased)."""
    if attribute == "username":
        return _user_name_key == str(value).strip().lower()
    if attribute in ("emails.value", "emails"):
        return users.c.email_key == email_key(str(value))
    if attribute == "externalid":
        return users.c.external_id == str(value)
    if attribute == "id":
        return users.c.id == str(value)
    return users.c.status == ("active" if value is True else "disabled")


async def get_in(conn: AsyncConnection, user_id: str) -> ScimUser | None:
    row = (await conn.execute(select(users).where(users.c.id == user_id, _LIVE))).first()
    return None if row is None else _from_row(row)


async def get(engine: AsyncEngine, user_id: str) -> ScimUser:
    async with engine.connect() as conn:
        found = await get_in(conn, user_id)
    if found is None:
        raise NotFound(f"no user {user_id!r}")
    return found


async def query(
    engine: AsyncEngine, where: ColumnElement[bool] | None, *, start: int, count: int
) -> tuple[int, list[ScimUser]]:
    """(totalResults, the page): `start` is SCIM's 1-based startIndex."""
    condition = _LIVE if where is None else _LIVE & where
    async with engine.connect() as conn:
        total = int(await conn.scalar(select(func.count()).select_from(users).where(condition)) or 0)
        stmt = select(users).where(condition).order_by(users.c.created_at_ms, users.c.id)
        rows = (await conn.execute(stmt.offset(start - 1).limit(count))).all() if count > 0 else []
    return total, [_from_row(r) for r in rows]


async def create(engine: AsyncEngine, fields: UserFields, *, actor: Actor) -> ScimUser:
    async with engine.begin() as conn:
        await _check_user_name_free(conn, fields.user_name, None)
        user_id = await create_user_in(conn, fields.email, actor=actor, name=fields.name)
        values = {
            "origin": "scim",
            "external_id": fields.external_id,
            "modified_at_ms": now_ms(),
            "scim_user_name_key": _user_name_key_of(fields.user_name, fields.email),
            "scim_attributes": fields.attributes,
        }
        await conn.execute(update(users).where(users.c.id == user_id).values(**values))
    if not fields.active:
        await update_user(engine, user_id, {"status": "disabled"}, actor=actor)
    return await get(engine, user_id)


async def change(engine: AsyncEngine, user_id: str, changes: dict[str, Any], *, actor: Actor) -> ScimUser:
    """Set any of `email`, `name`, `active`, `external_id`, `user_name` and `attributes` (a PUT sets them all,
    a PATCH those it names)."""
    found = await get(engine, user_id)
    async with engine.connect() as conn:  # before any change: a taken userName or email changes nothing
        await _check_user_name_free(conn, changes.get("user_name"), user_id)
        if "email" in changes and email_key(changes["email"]) != email_key(found.email):
            await _check_email_free(conn, email_key(check_email(changes["email"])))
    account = {}
    if "name" in changes:
        account["name"] = check_name(changes["name"])
    if "active" in changes:
        account["status"] = "active" if changes["active"] else "disabled"
    if account:
        await update_user(engine, user_id, account, actor=actor)  # the one path that ends sessions and keys
    own: dict[str, Any] = {}
    if "email" in changes and email_key(changes["email"]) != email_key(found.email):
        own["email"] = check_email(changes["email"])
        own["email_key"] = email_key(own["email"])
    elif "email" in changes and changes["email"] != found.email:
        own["email"] = check_email(changes["email"])  # the same address, spelled differently
    if "external_id" in changes and changes["external_id"] != found.external_id:
        own["external_id"] = changes["external_id"]
    scim_own: dict[str, Any] = {}
    if "attributes" in changes:
        scim_own["scim_attributes"] = changes["attributes"]
        user_name = changes.get("user_name")
        scim_own["scim_user_name_key"] = _user_name_key_of(user_name, own.get("email", found.email))
    async with engine.begin() as conn:
        await _check_user_name_free(conn, changes.get("user_name"), user_id)
        if "email_key" in own:
            await _check_email_free(conn, own["email_key"])
        if own:
            before = {k: getattr(found, k) for k in own if k != "email_key"}
            after = {k: v for k, v in own.items() if k != "email_key"}
            await audit.record(
                conn, actor, "user.scim_update", team_id=None, target=user_id, before=before, after=after
            )
        values = {**own, **scim_own, "modified_at_ms": now_ms()}
        await conn.execute(update(users).where(users.c.id == user_id).values(**values))
    return await get(engine, user_id)


async def delete(engine: AsyncEngine, user_id: str, *, actor: Actor) -> None:
    """Disable the user (ending sessions and personal keys), take it out of every SCIM group, hide it."""
    await get(engine, user_id)
    await update_user(engine, user_id, {"status": "disabled"}, actor=actor)
    async with engine.begin() as conn:
        await conn.execute(update(users).where(users.c.id == user_id).values(scim_deleted_at_ms=now_ms()))
        had = await groups.remove_user_everywhere_in(conn, user_id)
        await audit.record(conn, actor, "user.scim_delete", team_id=None, target=user_id, after={"groups": had})
