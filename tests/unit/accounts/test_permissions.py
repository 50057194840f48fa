"""The one table of what each role may do (`accounts.permissions`), which every door checks: team roles, the
team role a key stands for, who may grant which role, and operator roles."""

from __future__ import annotations

import pytest

from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import (
    OPERATOR_REFUSAL,
    REFUSAL,
    OperatorPermission,
    Permission,
    allows,
    check_grant,
    check_operator,
    check_permission,
    may_grant,
)
from modelport.errors import Forbidden

P = Permission
# The table as docs/api/accounts.md states it, written out independently of the code's sets.
EXPECTED: dict[str, set[Permission]] = {
    "owner": set(Permission),
    "admin": set(Permission) - {P.MANAGE_OWNERS},
    "developer": {P.VIEW, P.READ_PAYLOADS, P.USE_MEDIA, P.MANAGE_OWN_KEYS},
    "viewer": {P.VIEW},
    "": set(),
    "member": set(),  # a key role is not a team role
}


def _key(role: str) -> AuthContext:
    return AuthContext(key_id="key_1", key_prefix="mp-x", team_id="team_1", team_name="t", tier="free", role=role)


def _person(team_role: str) -> AuthContext:
    return AuthContext("", "", "team_1", "t", "free", user_id="usr_1", member_role=team_role)


@pytest.mark.parametrize("role", sorted(EXPECTED))
@pytest.mark.parametrize("permission", list(Permission))
def test_each_team_role_has_exactly_its_permissions(role: str, permission: Permission) -> None:
    assert allows(role, permission) == (permission in EXPECTED[role])
    if permission in EXPECTED[role]:
        check_permission(_person(role), permission)
    else:
        with pytest.raises(Forbidden) as refused:
            check_permission(_person(role), permission)
        assert refused.value.media_message == "Forbidden: your role in this team does not allow this"
        assert refused.value.detail == REFUSAL


@pytest.mark.parametrize(("key_role", "team_role"), [("admin", "admin"), ("member", "developer"), ("x", "viewer")])
def test_a_key_acts_with_the_team_role_its_role_stands_for(key_role: str, team_role: str) -> None:
    assert _key(key_role).team_role == team_role
    for permission in Permission:
        assert allows(_key(key_role).team_role, permission) == (permission in EXPECTED[team_role])


def test_admins_grant_up_to_admin_owners_every_role_others_none() -> None:
    assert all(may_grant("owner", r) for r in ("owner", "admin", "developer", "viewer"))
    assert [r for r in ("owner", "admin", "developer", "viewer") if may_grant("admin", r)] == [
        "admin",
        "developer",
        "viewer",
    ]
    for role in ("developer", "viewer", ""):
        assert not any(may_grant(role, r) for r in ("owner", "admin", "developer", "viewer"))
    with pytest.raises(Forbidden):
        check_grant(_key("admin"), "owner")  # an admin key never touches owners
    check_grant(_key("admin"), "viewer")


def test_operator_roles() -> None:
    check_operator("operator", OperatorPermission.CHANGE)
    check_operator("operator_viewer", OperatorPermission.READ)
    for role in ("operator_viewer", None, "owner"):
        with pytest.raises(Forbidden) as refused:
            check_operator(role, OperatorPermission.CHANGE)
        assert refused.value.detail == OPERATOR_REFUSAL
    with pytest.raises(Forbidden):
        check_operator(None, OperatorPermission.READ)
