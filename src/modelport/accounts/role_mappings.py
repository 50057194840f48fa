"""Role mappings: a person's identity-provider groups (the OIDC groups claim at sign-in, or their SCIM
groups' displayNames) give team memberships and an operator role (`MODELPORT_OIDC__ROLE_MAPPINGS`,
docs/deploy/sso.md).

What a mapping gave is recorded in `mapped_grants`, so a change of groups adds and takes back exactly those:
a membership or operator role given by hand is never touched, and one a person already had by hand is not
taken over. A mapped grant someone has since changed by hand (another role) becomes theirs: its record goes.
The last owner of a team is never removed or demoted here (the team keeps its owner; a warning is logged).

The SCIM hook (`accounts.scim.groups._memberships_changed`) runs inside accounts' transactions without the
service container, so the mappings are installed once per process at assembly (`install`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.accounts import audit
from modelport.accounts.audit import Actor
from modelport.accounts.permissions import OPERATOR_ROLES, TEAM_ROLES
from modelport.accounts.tables import mapped_grants, memberships, teams, users
from modelport.accounts.users import end_person_in
from modelport.clock import now_ms
from modelport.settings import RoleMapping

log = logging.getLogger(__name__)

OPERATOR_SCOPE = "operator"
SOURCE = "role_mappings"
Mappings = Mapping[str, Sequence[RoleMapping]]

_installed: dict[str, list[RoleMapping]] = {}


def install(mappings: Mappings) -> None:
    """The process's mappings (assembly; the SCIM hook reads them with `installed`)."""
    _installed.clear()
    _installed.update({name: list(grants) for name, grants in mappings.items()})


def installed() -> Mappings:
    return _installed


@dataclass(slots=True)
class Applied:
    """What one application changed (for the sign-in's audit event and the tests)."""

    added: list[str] = field(default_factory=list)  # "team_id:role" or "operator:role"
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def _better(roles: Sequence[str], a: str | None, b: str) -> str:
    return b if a is None or roles.index(b) < roles.index(a) else a


async def _team_id(conn: AsyncConnection, ref: str) -> str | None:
    value = await conn.scalar(select(teams.c.id).where(or_(teams.c.id == ref, teams.c.name == ref)).limit(1))
    return None if value is None else str(value)


async def wanted_in(conn: AsyncConnection, groups: Iterable[str], mappings: Mappings) -> dict[str, str]:
    """scope → role the groups give: team ids (the highest role of several) and `operator`. Group names
    match case-insensitively (SCIM's displayName is unique that way); an unknown team is logged and skipped."""
    by_key = {name.lower(): grants for name, grants in mappings.items()}
    wanted: dict[str, str] = {}
    for group in groups:
        for grant in by_key.get(group.lower(), ()):
            if grant.operator_role is not None:
                wanted[OPERATOR_SCOPE] = _better(OPERATOR_ROLES, wanted.get(OPERATOR_SCOPE), grant.operator_role)
                continue
            assert grant.team is not None and grant.role is not None  # RoleMapping's own check
            team_id = await _team_id(conn, grant.team)
            if team_id is None:
                log.warning("role mapping of group %r names team %r, which does not exist", group, grant.team)
                continue
            wanted[team_id] = _better(TEAM_ROLES, wanted.get(team_id), grant.role)
    return wanted


async def _owners(conn: AsyncConnection, team_id: str) -> int:
    stmt = select(func.count()).where(memberships.c.team_id == team_id, memberships.c.role == "owner")
    return int(await conn.scalar(stmt) or 0)


async def apply_in(
    conn: AsyncConnection, user_id: str, groups: Iterable[str], *, mappings: Mappings, actor: Actor | None
) -> Applied:
    """Make the user's mapped grants those `groups` give, in the caller's transaction."""
    groups = sorted(set(groups))
    wanted = await wanted_in(conn, groups, mappings)
    rows = (await conn.execute(select(mapped_grants).where(mapped_grants.c.user_id == user_id))).all()
    recorded = {r.scope: r.role for r in rows}
    applied = Applied()
    why: dict[str, object] = {"source": SOURCE, "groups": groups}
    for scope in sorted(set(wanted) | set(recorded)):
        if scope == OPERATOR_SCOPE:
            await _operator(conn, user_id, wanted.get(scope), recorded.get(scope), applied, actor, why)
        else:
            await _team(conn, user_id, scope, wanted.get(scope), recorded.get(scope), applied, actor, why)
    return applied


async def _record(conn: AsyncConnection, user_id: str, scope: str, role: str | None, *, had: bool) -> None:
    where = (mapped_grants.c.user_id == user_id, mapped_grants.c.scope == scope)
    if role is None:
        await conn.execute(delete(mapped_grants).where(*where))
    elif had:
        await conn.execute(update(mapped_grants).where(*where).values(role=role))
    else:
        await conn.execute(
            insert(mapped_grants).values(user_id=user_id, scope=scope, role=role, granted_at_ms=now_ms())
        )


async def _team(
    conn: AsyncConnection,
    user_id: str,
    team_id: str,
    want: str | None,
    mapped: str | None,
    applied: Applied,
    actor: Actor | None,
    why: Mapping[str, object],
) -> None:
    where = (memberships.c.team_id == team_id, memberships.c.user_id == user_id)
    current = await conn.scalar(select(memberships.c.role).where(*where))
    if mapped is not None and current != mapped:
        # Removed or changed by hand since the mapping gave it: no longer the mapping's to manage.
        await _record(conn, user_id, team_id, None, had=True)
        if current is not None:
            return
        mapped = None
    if mapped is None:
        if want is None or current is not None:
            return  # nothing to give, or a membership given by hand: it stays as it is
        joined = {"team_id": team_id, "user_id": user_id, "role": want, "joined_at_ms": now_ms()}
        await conn.execute(insert(memberships).values(**joined))
        await _record(conn, user_id, team_id, want, had=False)
        await audit.record(conn, actor, "member.add", team_id=team_id, target=user_id, after={"role": want, **why})
        applied.added.append(f"{team_id}:{want}")
        return
    if want == mapped:
        return
    if mapped == "owner" and await _owners(conn, team_id) <= 1:
        log.warning("groups of %s no longer make them owner of %s, its last owner: kept", user_id, team_id)
        return
    before = {"role": mapped}
    if want is None:
        await conn.execute(delete(memberships).where(*where))
        revoked = await end_person_in(conn, user_id, team_id=team_id)
        await _record(conn, user_id, team_id, None, had=True)
        after = {"personal_keys_revoked": revoked, **why}
        await audit.record(conn, actor, "member.remove", team_id=team_id, target=user_id, before=before, after=after)
        applied.removed.append(f"{team_id}:{mapped}")
        return
    await conn.execute(update(memberships).where(*where).values(role=want))
    await _record(conn, user_id, team_id, want, had=True)
    after = {"role": want, **why}
    await audit.record(conn, actor, "member.role", team_id=team_id, target=user_id, before=before, after=after)
    applied.changed.append(f"{team_id}:{want}")


async def _operator(
    conn: AsyncConnection,
    user_id: str,
    want: str | None,
    mapped: str | None,
    applied: Applied,
    actor: Actor | None,
    why: Mapping[str, object],
) -> None:
    current = await conn.scalar(select(users.c.operator_role).where(users.c.id == user_id))
    if mapped is not None and current != mapped:
        await _record(conn, user_id, OPERATOR_SCOPE, None, had=True)  # changed by hand since: theirs now
        if current is not None:
            return
        mapped = None
    if mapped is None and (want is None or current is not None):
        return
    if want == mapped:
        return
    await conn.execute(update(users).where(users.c.id == user_id).values(operator_role=want))
    await _record(conn, user_id, OPERATOR_SCOPE, want, had=mapped is not None)
    before, after = {"operator_role": mapped}, {"operator_role": want, **why}
    await audit.record(conn, actor, "user.update", team_id=None, target=user_id, before=before, after=after)
    (applied.added if mapped is None else applied.removed if want is None else applied.changed).append(
        f"{OPERATOR_SCOPE}:{want or mapped}"
    )
