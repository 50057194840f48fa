"""What each role may do: the one table every door checks (team console, team API, admin API, CLI).

A person acts in a team with their membership's role (`owner`, `admin`, `developer`, `viewer`); a key acts
with the team role its key role stands for (`admin` → `admin`, `member` → `developer`). An operator account
acts with its operator role (`operator`: everything the admin token can do; `operator_viewer`: reads only).
An API route and the console page or form that does the same thing name the same permission
(`web.deps.media_auth_with`, `console.deps.team_with`), so a refusal is the same 403 on each:
`Forbidden: your role in this team does not allow this`. docs/api/accounts.md shows the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Protocol

from modelport.errors import Forbidden


class Permission(StrEnum):
    VIEW = "view"  # overview, balance, usage, logs without payloads, tasks, members
    READ_PAYLOADS = "read_payloads"  # request and response bodies in the log
    USE_MEDIA = "use_media"  # files, assets, task actions
    MANAGE_OWN_KEYS = "manage_own_keys"  # create (role member) and revoke one's own personal keys
    MANAGE_KEYS = "manage_keys"  # list, create, edit and revoke every key of the team
    READ_AUDIT = "read_audit"  # the team's audit log
    MANAGE_NOTIFICATIONS = "manage_notifications"  # notification settings, webhooks, tests and deliveries
    MANAGE_MEMBERS = "manage_members"  # invite, change roles up to admin, remove non-owners
    MANAGE_OWNERS = "manage_owners"  # make, demote and remove owners
    PURGE_CACHE = "purge_cache"  # remove every answer the team's response cache holds
    MANAGE_CACHE = "manage_cache"  # the team's response cache: off | team | key, and whether tool calls are stored


TEAM_ROLES: tuple[str, ...] = ("owner", "admin", "developer", "viewer")
_DEVELOPER = frozenset({Permission.VIEW, Permission.READ_PAYLOADS, Permission.USE_MEDIA, Permission.MANAGE_OWN_KEYS})
ROLE_PERMISSIONS: Mapping[str, frozenset[Permission]] = {
    "owner": frozenset(Permission),
    "admin": frozenset(Permission) - {Permission.MANAGE_OWNERS},
    "developer": _DEVELOPER,
    "viewer": frozenset({Permission.VIEW}),
}
# The team role a key acts with, by its key role.
KEY_ROLE_AS_TEAM_ROLE: Mapping[str, str] = {"admin": "admin", "member": "developer"}


class OperatorPermission(StrEnum):
    READ = "read"  # the operator console's pages and the admin API's GETs
    CHANGE = "change"  # every other admin API call and operator console form


OPERATOR_ROLES: tuple[str, ...] = ("operator", "operator_viewer")
OPERATOR_ROLE_PERMISSIONS: Mapping[str, frozenset[OperatorPermission]] = {
    "operator": frozenset(OperatorPermission),
    "operator_viewer": frozenset({OperatorPermission.READ}),
}

REFUSAL = "your role in this team does not allow this"
OPERATOR_REFUSAL = "your operator role does not allow this"


class Acting(Protocol):
    """Whoever acts in a team: an auth context (`accounts.auth.AuthContext`) of a key or a person."""

    @property
    def team_role(self) -> str: ...


def allows(team_role: str, permission: Permission) -> bool:
    """Whether `team_role` has `permission` (an unknown role has none)."""
    return permission in ROLE_PERMISSIONS.get(team_role, frozenset())


def may_grant(team_role: str, role: str) -> bool:
    """Whether `team_role` may give (or take away) the team role `role`: admins up to admin, owners all."""
    if role == "owner":
        return allows(team_role, Permission.MANAGE_OWNERS)
    return allows(team_role, Permission.MANAGE_MEMBERS)


def check_permission(auth: Acting, permission: Permission) -> None:
    """403 unless the caller's team role has `permission`."""
    if not allows(auth.team_role, permission):
        raise Forbidden(REFUSAL)


def check_grant(auth: Acting, role: str) -> None:
    if not may_grant(auth.team_role, role):
        raise Forbidden(REFUSAL)


def operator_allows(operator_role: str | None, permission: OperatorPermission) -> bool:
    return operator_role is not None and permission in OPERATOR_ROLE_PERMISSIONS.get(operator_role, frozenset())


def check_operator(operator_role: str | None, permission: OperatorPermission) -> None:
    if not operator_allows(operator_role, permission):
        raise Forbidden(OPERATOR_REFUSAL)
