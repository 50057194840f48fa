"""What a key's role lets it do: the one table the team APIs (media host) and the team console both check.

Every key of a team uses the API within its own limits and reads the team's pages; the permissions below
are what only some roles have. An API route and the console page or form that does the same thing name the
same permission (`web.deps.media_auth_with`, `console.deps.team_with`), so a key refused by the one is
refused by the other, with the same message.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from modelport.accounts.auth import AuthContext
from modelport.errors import Forbidden


class Permission(StrEnum):
    MANAGE_KEYS = "manage_keys"  # list, create, edit and revoke the team's keys
    READ_AUDIT = "read_audit"  # the team's audit log
    MANAGE_NOTIFICATIONS = "manage_notifications"  # the team's notification settings, tests and deliveries


ROLE_PERMISSIONS: Mapping[str, frozenset[Permission]] = {
    "member": frozenset(),
    "admin": frozenset(Permission),
}

# The refusal of each permission, as both the API (`Forbidden: ...`) and the console's error page show it.
REFUSALS: Mapping[Permission, str] = {
    Permission.MANAGE_KEYS: "this API key cannot manage keys",
    Permission.READ_AUDIT: "this API key cannot read the audit log",
    Permission.MANAGE_NOTIFICATIONS: "this API key cannot manage the team's notifications",
}


def allows(role: str, permission: Permission) -> bool:
    """Whether a key of `role` has `permission` (an unknown role has none)."""
    return permission in ROLE_PERMISSIONS.get(role, frozenset())


def check_permission(auth: AuthContext, permission: Permission) -> None:
    """403 with the permission's refusal unless the calling key's role has it."""
    if not allows(auth.role, permission):
        raise Forbidden(REFUSALS[permission])
