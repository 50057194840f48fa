"""Single sign-on's account rules without HTTP (issue 38), on SQLite and PostgreSQL: an invitation lets a
verified email in without auto-creation; an unverified email never links to a passwordless account; a
linked identity keeps signing in after the email changes; a disabled account is refused; one identity
cannot be linked to a second person."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import links, sso, users
from modelport.accounts import service as accounts
from modelport.accounts.audit import Actor
from modelport.accounts.sso import ProviderClaims, SsoRefused
from modelport.settings import OidcSettings
from tests.support.databases import BACKENDS, migrated_engine

ISSUER = "https://idp.example.com"
OIDC = OidcSettings(issuer=ISSUER, client_id="c", display_name="Acme SSO", allowed_email_domains=["acme.test"])
ACTOR = Actor("user")


def claims(sub: str, email: str, *, verified: bool = True) -> ProviderClaims:
    return ProviderClaims(ISSUER, sub, email, verified, None, None)


async def refusal(engine: AsyncEngine, found: ProviderClaims, oidc: OidcSettings = OIDC) -> str:
    with pytest.raises(SsoRefused) as caught:
        await sso.sign_in(engine, oidc, found, actor=ACTOR)
    return caught.value.reason


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_invitation_lets_a_verified_email_in(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        team = await accounts.create_team(engine, "acme", tier="free")
        assert await refusal(engine, claims("s1", "ivy@other.test")) == "no_account"  # no auto-creation
        await links.invite(engine, team.id, "Ivy@Other.test", "admin", lifetime_ms=60_000, actor=ACTOR)
        assert await refusal(engine, claims("s1", "ivy@other.test", verified=False)) == "email_unverified"
        ivy = await sso.sign_in(engine, OIDC, claims("s1", "ivy@other.test"), actor=ACTOR)
        assert ivy.teams == ((team.id, "admin"),) and not ivy.password_set
        assert (await links.list_invitations(engine, team.id, pending_only=True)) == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_linking_needs_a_verified_email_and_holds_across_email_changes(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        async with engine.begin() as conn:
            made = await users.create_user_in(conn, "olga@acme.test", actor=None)
        assert await refusal(engine, claims("s2", "olga@acme.test", verified=False)) == "email_unverified"
        linked = await sso.sign_in(engine, OIDC, claims("s2", "olga@acme.test"), actor=ACTOR)
        assert linked.id == made
        renamed = claims("s2", "olga.new@elsewhere.test", verified=False)  # the identity, not the email, decides
        assert (await sso.sign_in(engine, OIDC, renamed, actor=ACTOR)).id == made
        with pytest.raises(SsoRefused) as caught:  # that identity cannot also be linked to someone else
            async with engine.begin() as conn:
                other = await users.create_user_in(conn, "pat@acme.test", actor=None)
            await sso.link(engine, OIDC, other, claims("s2", "pat@acme.test"), actor=ACTOR)
        assert caught.value.reason == "linked_elsewhere"
        await users.update_user(engine, made, {"status": "disabled"}, actor=ACTOR)
        assert await refusal(engine, claims("s2", "olga@acme.test")) == "disabled"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_auto_creation_only_in_the_allowed_domains(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        auto = OIDC.model_copy(update={"auto_create_users": True})
        assert await refusal(engine, claims("s3", "eve@acme.test.evil"), auto) == "domain_not_allowed"
        made = await sso.sign_in(engine, auto, claims("s3", "new@acme.test"), actor=ACTOR)
        assert made.email == "new@acme.test" and made.teams == ()
