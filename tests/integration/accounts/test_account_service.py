"""The account service without HTTP (what OIDC and SCIM doors will call), on SQLite and PostgreSQL: two
owners demoting each other at once leave one owner; an invitation accepted twice at once makes one member;
removal ends the person's sessions and personal keys in its transaction."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import console_sessions, links, members, users
from modelport.accounts import service as accounts
from modelport.accounts.audit import Actor
from modelport.errors import Conflict, Gone
from tests.support.databases import BACKENDS, migrated_engine

ACTOR = Actor("operator_cli")
PASSWORD = "a long enough passphrase 42"


async def _person(engine: AsyncEngine, email: str) -> str:
    async with engine.begin() as conn:
        return await users.create_user_in(conn, email, actor=ACTOR, password=PASSWORD)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_last_owner_rule_holds_under_concurrent_demotions(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        first, second = await _person(engine, "a@example.com"), await _person(engine, "b@example.com")
        teams = [await accounts.create_team(engine, f"owners-{n}", tier="free") for n in range(8)]
        for team in teams:
            for user_id in (first, second):
                await members.add_member(engine, team.id, user_id, "owner", actor=ACTOR)
        # Every team's two owners demote themselves at once, all teams together.
        results = await asyncio.gather(
            *(
                members.set_role(engine, team.id, user_id, "admin", actor=ACTOR)
                for team in teams
                for user_id in (first, second)
            ),
            return_exceptions=True,
        )
        refused = [r for r in results if isinstance(r, Conflict)]
        assert len(refused) == len(teams), results
        assert all(r.detail == "a team keeps at least one owner" for r in refused)
        for team in teams:
            assert sorted(m.role for m in await members.list_members(engine, team.id)) == ["admin", "owner"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_invitation_accepted_twice_at_once_makes_one_member(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        team = await accounts.create_team(engine, "racing", tier="free")
        _, token = await links.invite(engine, team.id, "racer@example.com", "viewer", lifetime_ms=60_000, actor=ACTOR)
        results = await asyncio.gather(
            *(links.accept_invitation(engine, token, name="R", password=PASSWORD) for _ in range(2)),
            return_exceptions=True,
        )
        assert sum(1 for r in results if isinstance(r, tuple)) == 1, results
        assert all(isinstance(r, tuple | Gone | Conflict) for r in results), results
        assert [m.email for m in await members.list_members(engine, team.id)] == ["racer@example.com"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_removal_ends_sessions_and_personal_keys_in_its_transaction(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        team = await accounts.create_team(engine, "leaving", tier="free")
        owner, leaver = await _person(engine, "o@example.com"), await _person(engine, "l@example.com")
        await members.add_member(engine, team.id, owner, "owner", actor=ACTOR)
        await members.add_member(engine, team.id, leaver, "developer", actor=ACTOR)
        personal = await accounts.create_key(engine, team.id, owner_user_id=leaver, created_by=leaver)
        team_key = await accounts.create_key(engine, team.id)
        token = await console_sessions.start(engine, lifetime_ms=60_000, team_id=team.id, user_id=leaver)
        found = await console_sessions.person_session(engine, token, user_id=leaver)
        assert found is not None and found.team_role == "developer"
        await members.remove_member(engine, team.id, leaver, actor=ACTOR)
        assert await console_sessions.person_session(engine, token, user_id=leaver) is None
        assert not (await accounts.get_key(engine, personal.record.id)).active
        assert (await accounts.get_key(engine, team_key.record.id)).active
