"""The one table of what each key role may do (`accounts.permissions`), which the API and the console check."""

from __future__ import annotations

import pytest

from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import REFUSALS, Permission, allows, check_permission
from modelport.errors import Forbidden


def _key(role: str) -> AuthContext:
    return AuthContext(key_id="key_1", key_prefix="mp-x", team_id="team_1", team_name="t", tier="free", role=role)


@pytest.mark.parametrize("permission", list(Permission))
def test_admins_have_every_permission_members_and_unknown_roles_none(permission: Permission) -> None:
    assert allows("admin", permission)
    check_permission(_key("admin"), permission)
    for role in ("member", "owner", ""):
        assert not allows(role, permission)
        with pytest.raises(Forbidden) as refused:
            check_permission(_key(role), permission)
        assert refused.value.detail == REFUSALS[permission]
