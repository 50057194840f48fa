"""People: console accounts with an email, a password (argon2id), an optional second factor and an optional
operator role. The account service's functions take an engine and the acting `Actor`; every door (console
forms, the admin and team APIs, the CLI, and later OIDC and SCIM) calls them, none goes through HTTP forms.

Disabling a user ends their console sessions and revokes their personal keys in the same transaction
(`end_person_in`), so every process refuses them from its next request on. Each key stopped that way
records why (`stopped_reason` `owner_disabled`), and enabling the user brings back exactly those keys, in
the teams they are still a member of: never a key revoked by hand (`revoked`) or stopped by leaving a
team (`owner_left`; re-adding the member does not restore them: the new membership may have a lower role
than the one the key was made under).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Row, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit
from modelport.accounts.audit import Actor
from modelport.accounts.passwords import check_new_password, hash_password_off_loop
from modelport.accounts.permissions import OPERATOR_ROLES
from modelport.accounts.tables import api_keys, console_sessions, memberships, users
from modelport.clock import now_ms
from modelport.errors import Conflict, InvalidParameters, NotFound
from modelport.ids import new_id

STATUSES = ("active", "disabled")
# Why a key stopped (`api_keys.stopped_reason`): only OWNER_DISABLED keys come back, on enabling the owner.
OWNER_DISABLED = "owner_disabled"
OWNER_LEFT = "owner_left"
REVOKED = "revoked"
# The placeholder email of the first operator account `serve` offers; its setup page asks for the real one.
FIRST_OPERATOR_EMAIL = "first-operator@modelport.invalid"
MAX_EMAIL = 320
MAX_NAME = 100
# Deliberately loose (RFC 5322 allows far more): one @, a dot in the domain, no spaces or control characters.
_EMAIL_RE = re.compile(r"^[^@\s\x00-\x1f]{1,64}@[^@\s\x00-\x1f]+\.[^@\s\x00-\x1f]+$")


@dataclass(frozen=True, slots=True)
class User:
    id: str
    email: str
    name: str | None
    status: str
    operator_role: str | None
    totp_enabled: bool
    created_at_ms: int
    last_sign_in_at_ms: int | None
    password_set: bool = False
    teams: tuple[tuple[str, str], ...] = field(default=())  # (team_id, role)

    @property
    def active(self) -> bool:
        return self.status == "active"

    def to_public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "email": self.email,
            "name": self.name,
            "status": self.status,
            "operator_role": self.operator_role,
            "second_factor": self.totp_enabled,
            "created_at": self.created_at_ms // 1000,
            "last_sign_in_at": None if self.last_sign_in_at_ms is None else self.last_sign_in_at_ms // 1000,
            "teams": [{"team_id": team_id, "role": role} for team_id, role in self.teams],
        }


def email_key(email: str) -> str:
    return email.strip().lower()


def check_email(email: str) -> str:
    value = email.strip()
    if len(value) > MAX_EMAIL or not _EMAIL_RE.match(value):
        raise InvalidParameters("email must be an email address", param="email")
    return value


def check_name(name: object) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str):  # a JSON body may carry any type (a 500 before, found by schemathesis)
        raise InvalidParameters("name must be a string", param="name")
    value = name.strip()
    if "\x00" in value or len(value) > MAX_NAME:
        raise InvalidParameters(f"name is at most {MAX_NAME} characters, without NUL", param="name")
    return value or None


def check_operator_role(role: object) -> str | None:
    if role is not None and (not isinstance(role, str) or role not in OPERATOR_ROLES):
        raise InvalidParameters(
            f"operator_role must be one of {', '.join(OPERATOR_ROLES)} or null", param="operator_role"
        )
    return role


def user_from_row(row: Row[Any], teams: tuple[tuple[str, str], ...] = ()) -> User:
    m = row._mapping
    return User(
        id=m["id"],
        email=m["email"],
        name=m["name"],
        status=m["status"],
        operator_role=m["operator_role"],
        totp_enabled=bool(m["totp_enabled"]),
        created_at_ms=int(m["created_at_ms"]),
        last_sign_in_at_ms=None if m["last_sign_in_at_ms"] is None else int(m["last_sign_in_at_ms"]),
        password_set=m["password_hash"] is not None,
        teams=teams,
    )


async def _teams_of(conn: AsyncConnection, user_id: str) -> tuple[tuple[str, str], ...]:
    stmt = (
        select(memberships.c.team_id, memberships.c.role)
        .where(memberships.c.user_id == user_id)
        .order_by(memberships.c.joined_at_ms, memberships.c.team_id)
    )
    return tuple((r.team_id, r.role) for r in (await conn.execute(stmt)).all())


async def user_in(conn: AsyncConnection, ref: str) -> User | None:
    """A user by id or email (case-insensitive), with their teams."""
    by_email = "@" in ref  # an id never holds one; an email may start with "usr_"
    where = users.c.email_key == email_key(ref) if by_email else users.c.id == ref
    row = (await conn.execute(select(users).where(where))).first()
    if row is None:
        return None
    return user_from_row(row, await _teams_of(conn, row.id))


async def get_user(engine: AsyncEngine, ref: str) -> User:
    async with engine.connect() as conn:
        found = await user_in(conn, ref)
    if found is None:
        raise NotFound(f"no user {ref!r}")
    return found


def not_placeholder() -> ColumnElement[bool]:
    """Rows other than the first operator's placeholder before its setup: the placeholder is no one yet (its
    setup page asks for the person's email), so the lists of people leave it out; once set up it is the
    person's account, with their email."""
    return ~((users.c.email_key == FIRST_OPERATOR_EMAIL) & users.c.password_hash.is_(None))


async def list_users(engine: AsyncEngine) -> list[User]:
    """Every user but the first operator's placeholder before its setup (`not_placeholder`)."""
    stmt = select(users).where(not_placeholder()).order_by(users.c.created_at_ms, users.c.id)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
        found = (await conn.execute(select(memberships).order_by(memberships.c.joined_at_ms))).all()
    by_user: dict[str, list[tuple[str, str]]] = {}
    for m in found:
        by_user.setdefault(m.user_id, []).append((m.team_id, m.role))
    return [user_from_row(r, tuple(by_user.get(r.id, ()))) for r in rows]


async def create_user_in(
    conn: AsyncConnection,
    email: str,
    *,
    actor: Actor | None,
    name: str | None = None,
    operator_role: str | None = None,
    password: str | None = None,
) -> str:
    """Insert a user in the caller's transaction; the new id. 409 when the email is taken."""
    email = check_email(email)
    if password is not None:
        check_new_password(password, email=email)
    user_id = new_id("usr")
    values = {
        "id": user_id,
        "email": email,
        "email_key": email_key(email),
        "name": check_name(name),
        "status": "active",
        "operator_role": check_operator_role(operator_role),
        "password_hash": None if password is None else await hash_password_off_loop(password),
        "totp_enabled": False,
        "created_at_ms": now_ms(),
    }
    taken = await conn.scalar(select(users.c.id).where(users.c.email_key == values["email_key"]))
    if taken is not None:
        raise Conflict("a user with that email already exists")
    try:
        async with conn.begin_nested():
            await conn.execute(insert(users).values(**values))
    except IntegrityError as exc:
        raise Conflict("a user with that email already exists") from exc
    after = {"email": email, "name": values["name"], "operator_role": operator_role}
    await audit.record(conn, actor, "user.create", team_id=None, target=user_id, after=after)
    return user_id


async def update_user(engine: AsyncEngine, ref: str, changes: dict[str, Any], *, actor: Actor | None) -> User:
    """Set `name`, `status` or `operator_role`. Disabling ends the person's sessions and personal keys."""
    unknown = set(changes) - {"name", "status", "operator_role"}
    if unknown:
        raise InvalidParameters(f"unknown user fields: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    if "name" in changes:
        values["name"] = check_name(changes["name"])
    if "status" in changes:
        if not isinstance(changes["status"], str) or changes["status"] not in STATUSES:
            raise InvalidParameters("status must be active or disabled", param="status")
        values["status"] = changes["status"]
    if "operator_role" in changes:
        values["operator_role"] = check_operator_role(changes["operator_role"])
    found = await get_user(engine, ref)
    async with engine.begin() as conn:
        before = {k: getattr(found, k) for k in values}
        if before == values:
            return found
        await conn.execute(update(users).where(users.c.id == found.id).values(**values))
        after = dict(values)
        if values.get("status") == "disabled":
            await end_person_in(conn, found.id, team_id=None)
        elif values.get("status") == "active" and found.status == "disabled":
            after["personal_keys_restored"] = await restore_personal_keys_in(conn, found.id)
        action = {"status": "user.disable" if values.get("status") == "disabled" else "user.enable"}.get(
            next(iter(values)) if len(values) == 1 else "", "user.update"
        )
        await audit.record(conn, actor, action, team_id=None, target=found.id, before=before, after=after)
    return await get_user(engine, found.id)


async def end_person_in(conn: AsyncConnection, user_id: str, *, team_id: str | None) -> int:
    """In the caller's transaction: end the person's console sessions and revoke their personal keys (in one
    team as they leave it, or everywhere when `team_id` is None, as on disabling); how many keys were
    revoked. Each key records why (`OWNER_LEFT`, `OWNER_DISABLED`)."""
    owned = api_keys.c.owner_user_id == user_id
    keys = select(api_keys.c.id).where(owned, api_keys.c.revoked_at_ms.is_(None))
    sessions = delete(console_sessions).where(console_sessions.c.user_id == user_id)
    reason = OWNER_DISABLED
    if team_id is not None:
        reason = OWNER_LEFT
        keys = keys.where(api_keys.c.team_id == team_id)
        sessions = sessions.where(console_sessions.c.team_id == team_id)
        # Keys the disabling stopped stay stopped once the person left the team: enabling them later
        # must not bring these back.
        stopped = api_keys.c.stopped_reason == OWNER_DISABLED
        await conn.execute(
            update(api_keys).where(owned, api_keys.c.team_id == team_id, stopped).values(stopped_reason=OWNER_LEFT)
        )
    key_ids = [r.id for r in (await conn.execute(keys)).all()]
    await conn.execute(sessions)
    if key_ids:
        stop = update(api_keys).where(api_keys.c.id.in_(key_ids))
        await conn.execute(stop.values(revoked_at_ms=now_ms(), stopped_reason=reason))
        await conn.execute(delete(console_sessions).where(console_sessions.c.key_id.in_(key_ids)))
    return len(key_ids)


async def restore_personal_keys_in(conn: AsyncConnection, user_id: str) -> int:
    """In the caller's transaction, as the person is enabled again: the personal keys their disabling
    stopped work again, in the teams they are still a member of; how many."""
    still_member = select(memberships.c.team_id).where(memberships.c.user_id == user_id)
    restore = update(api_keys).where(
        api_keys.c.owner_user_id == user_id,
        api_keys.c.stopped_reason == OWNER_DISABLED,
        api_keys.c.team_id.in_(still_member),
    )
    return int((await conn.execute(restore.values(revoked_at_ms=None, stopped_reason=None))).rowcount or 0)


async def end_person_sessions_in(conn: AsyncConnection, user_id: str, *, keep: str | None = None) -> int:
    """End the person's console sessions (all, or all but the session row `keep`); how many."""
    stmt = delete(console_sessions).where(console_sessions.c.user_id == user_id)
    if keep is not None:
        stmt = stmt.where(console_sessions.c.id != keep)
    return int((await conn.execute(stmt)).rowcount or 0)


async def set_password_in(conn: AsyncConnection, user_id: str, password: str, *, email: str) -> None:
    check_new_password(password, email=email)
    hashed = await hash_password_off_loop(password)
    await conn.execute(update(users).where(users.c.id == user_id).values(password_hash=hashed))


async def password_hash_of(engine: AsyncEngine, user_id: str) -> str | None:
    async with engine.connect() as conn:
        value = await conn.scalar(select(users.c.password_hash).where(users.c.id == user_id))
    return None if value is None else str(value)


async def any_operator(engine: AsyncEngine) -> bool:
    """Whether some user with an operator role has set a password (until one has, `serve` prints a
    first-operator setup link)."""
    stmt = select(users.c.id).where(users.c.operator_role.is_not(None), users.c.password_hash.is_not(None))
    async with engine.connect() as conn:
        found = await conn.scalar(stmt.limit(1))
    return found is not None


async def set_name(engine: AsyncEngine, user_id: str, name: str | None, *, actor: Actor | None) -> None:
    value = check_name(name)
    async with engine.begin() as conn:
        await conn.execute(update(users).where(users.c.id == user_id).values(name=value))
        await audit.record(conn, actor, "user.name", team_id=None, target=user_id, after={"name": value})


async def end_all_sessions(engine: AsyncEngine, user_id: str, *, actor: Actor | None) -> int:
    """ "Sign out everywhere": every console session of the person ends."""
    async with engine.begin() as conn:
        ended = await end_person_sessions_in(conn, user_id)
        await audit.record(conn, actor, "user.end_sessions", team_id=None, target=user_id, after={"ended": ended})
    return ended
