"""Role mappings without HTTP (issue 38), on SQLite and PostgreSQL: groups give memberships and an operator
role and take back only what they gave; memberships given by hand stay; the last owner stays; SCIM group
changes apply the installed mappings in their transaction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import members, role_mappings, users
from modelport.accounts import service as accounts
from modelport.accounts.audit import Actor, AuditFilter, list_events
from modelport.accounts.scim import groups as scim_groups
from modelport.settings import RoleMapping
from tests.support.databases import BACKENDS, migrated_engine

ACTOR = Actor("user", user_id=None, email="idp@example.com")
MAPPINGS = {
    "AI-Team": [RoleMapping(team="acme", role="developer")],
    "leads": [RoleMapping(team="acme", role="admin"), RoleMapping(team="other", role="viewer")],
    "platform": [RoleMapping(operator_role="operator")],
    "ghost": [RoleMapping(team="no-such-team", role="viewer")],
}


async def _person(engine: AsyncEngine, email: str) -> str:
    async with engine.begin() as conn:
        return await users.create_user_in(conn, email, actor=None)


async def _apply(engine: AsyncEngine, user_id: str, groups: set[str]) -> role_mappings.Applied:
    async with engine.begin() as conn:
        return await role_mappings.apply_in(conn, user_id, groups, mappings=MAPPINGS, actor=ACTOR)


@pytest.fixture
def installed() -> Iterator[None]:
    role_mappings.install(MAPPINGS)
    yield
    role_mappings.install({})


@pytest.mark.parametrize("backend", BACKENDS)
async def test_groups_add_change_and_take_back_only_what_they_gave(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        acme = await accounts.create_team(engine, "acme", tier="free")
        other = await accounts.create_team(engine, "other", tier="free")
        hand = await accounts.create_team(engine, "by-hand", tier="free")
        ada = await _person(engine, "ada@example.com")
        await members.add_member(engine, hand.id, ada, "viewer", actor=ACTOR)
        await members.add_member(engine, other.id, ada, "developer", actor=ACTOR)  # by hand, before any mapping

        first = await _apply(engine, ada, {"ai-team", "platform", "ghost", "unmapped"})
        assert sorted(first.added) == sorted([f"{acme.id}:developer", "operator:operator"]), first
        user = await users.get_user(engine, ada)
        assert dict(user.teams) == {hand.id: "viewer", other.id: "developer", acme.id: "developer"}
        assert user.operator_role == "operator"
        assert not await _apply(engine, ada, {"AI-TEAM", "platform"})  # the same groups: nothing changes

        second = await _apply(engine, ada, {"leads"})  # acme: developer → admin; other was given by hand
        assert second.changed == [f"{acme.id}:admin"] and second.removed == ["operator:operator"], second
        user = await users.get_user(engine, ada)
        assert dict(user.teams) == {hand.id: "viewer", other.id: "developer", acme.id: "admin"}
        assert user.operator_role is None

        third = await _apply(engine, ada, set())
        assert third.removed == [f"{acme.id}:admin"], third
        user = await users.get_user(engine, ada)
        assert dict(user.teams) == {hand.id: "viewer", other.id: "developer"}  # hand-given ones stay

        events = await list_events(engine, AuditFilter(team_id=acme.id), limit=10)
        assert [e["action"] for e in events][:3] == ["member.remove", "member.role", "member.add"]
        assert events[0]["after"]["source"] == "role_mappings" and events[0]["actor"]["kind"] == "user"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_hand_given_operator_role_and_the_last_owner_stay(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        acme = await accounts.create_team(engine, "acme", tier="free")
        boss = await _person(engine, "boss@example.com")
        await users.update_user(engine, boss, {"operator_role": "operator_viewer"}, actor=ACTOR)
        owner_map = {"owners": [RoleMapping(team="acme", role="owner")], "platform": MAPPINGS["platform"]}
        async with engine.begin() as conn:
            got = await role_mappings.apply_in(conn, boss, {"owners", "platform"}, mappings=owner_map, actor=ACTOR)
        assert got.added == [f"{acme.id}:owner"]  # the operator role was given by hand: not taken over
        assert (await users.get_user(engine, boss)).operator_role == "operator_viewer"
        async with engine.begin() as conn:
            gone = await role_mappings.apply_in(conn, boss, set(), mappings=owner_map, actor=ACTOR)
        assert not gone  # the team's last owner is kept
        user = await users.get_user(engine, boss)
        assert dict(user.teams) == {acme.id: "owner"} and user.operator_role == "operator_viewer"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_scim_group_membership_applies_the_installed_mappings(
    backend: str, tmp_path: Path, installed: None
) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        acme = await accounts.create_team(engine, "acme", tier="free")
        ada = await _person(engine, "ada@example.com")
        scim = Actor("scim")
        group = await scim_groups.create(engine, "ai-team", external_id=None, members=set(), actor=scim)
        await scim_groups.change(engine, group.id, actor=scim, add={ada})
        assert dict((await users.get_user(engine, ada)).teams) == {acme.id: "developer"}
        await scim_groups.change(engine, group.id, actor=scim, remove={ada})
        assert (await users.get_user(engine, ada)).teams == ()
        await scim_groups.change(engine, group.id, actor=scim, add={ada})
        await scim_groups.delete_group(engine, group.id, actor=scim)
        assert (await users.get_user(engine, ada)).teams == ()
