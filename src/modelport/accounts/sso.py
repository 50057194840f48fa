"""Single sign-on's account rules: which user an OpenID Connect identity signs in as (docs/deploy/sso.md).

- A linked identity (issuer + `sub`, `accounts.identities`) signs in as its one user.
- An unknown identity links to the existing user with its email only when the provider says the email is
  verified (`email_verified: true`) and that user has never set a password (made by an operator, by SCIM or
  the CLI for that email). A user who set a password links only from their profile page while signed in
  with it (`link`), never silently: whoever controls some provider account with that email is not them.
- Otherwise, with a live invitation for the verified email, or with `auto_create_users` and an email of
  the allowed domains, the user is created (and the invitations accepted); else the sign-in is refused.
  The domains decide only who may be created: an account an operator or a team made for the email is theirs.
- Every sign-in then applies the groups claim to the mapped memberships (`accounts.role_mappings`); a token
  without the claim changes none (a warning is logged).

Refusals are `SsoRefused`, with a message for the person; the door audits them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit, identities, links, role_mappings
from modelport.accounts.audit import Actor
from modelport.accounts.tables import users
from modelport.accounts.users import User, check_email, create_user_in, get_user, user_in
from modelport.errors import Conflict, InvalidParameters
from modelport.settings import OidcSettings

log = logging.getLogger(__name__)
ORIGIN = "oidc"


@dataclass(frozen=True, slots=True)
class ProviderClaims:
    """What a checked ID token says about the person."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool
    name: str | None
    groups: tuple[str, ...] | None  # None: the token has no groups claim


class SsoRefused(Exception):
    """A refused sign-in or link: `message` is shown to the person, `reason` goes to the audit log."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def claims_from(issuer: str, raw: dict[str, object], groups_claim: str) -> ProviderClaims:
    """The person's claims from a checked ID token (merged with userinfo by the door)."""
    email = raw.get("email")
    name = raw.get("name")
    groups = raw.get(groups_claim)
    found: tuple[str, ...] | None = None
    if isinstance(groups, list):
        found = tuple(g for g in groups if isinstance(g, str))
    elif isinstance(groups, str):  # a provider sending one group as a string
        found = (groups,)
    return ProviderClaims(
        issuer=issuer,
        subject=str(raw["sub"]),
        email=email if isinstance(email, str) and email else None,
        email_verified=raw.get("email_verified") is True,
        name=name[:100] if isinstance(name, str) and name.strip() else None,
        groups=found,
    )


def _actor(base: Actor, user: User | None, email: str | None) -> Actor:
    return Actor("user", None, base.request_id, base.client, None if user is None else user.id, email)


async def sign_in(engine: AsyncEngine, oidc: OidcSettings, claims: ProviderClaims, *, actor: Actor) -> User:
    """The user this identity signs in as (linked or created here, groups applied), or `SsoRefused`."""
    async with engine.begin() as conn:
        user_id = await identities.user_of(conn, claims.issuer, claims.subject)
        if user_id is None:
            user_id = await _first_sign_in(conn, oidc, claims, actor)
        user = await user_in(conn, user_id)
        assert user is not None
        if not user.active:
            raise SsoRefused("disabled", "This account is disabled: ask the service's operator.")
        await _apply_groups(conn, oidc, user, claims, _actor(actor, user, user.email))
    return await get_user(engine, user_id)


async def link(engine: AsyncEngine, oidc: OidcSettings, user_id: str, claims: ProviderClaims, *, actor: Actor) -> User:
    """Link the identity to the signed-in person `user_id` (their profile's button), then apply the groups."""
    display = oidc.display_name
    async with engine.begin() as conn:
        user = await user_in(conn, user_id)
        if user is None or not user.active:
            raise SsoRefused("disabled", "This account is disabled: ask the service's operator.")
        who = _actor(actor, user, user.email)
        owner = await identities.user_of(conn, claims.issuer, claims.subject)
        if owner is not None and owner != user_id:
            raise SsoRefused("linked_elsewhere", f"That {display} account is linked to another account here.")
        if owner is None:
            await identities.link_in(conn, claims.issuer, claims.subject, user_id, actor=who)
        await _apply_groups(conn, oidc, user, claims, who)
    return await get_user(engine, user_id)


async def _apply_groups(
    conn: AsyncConnection, oidc: OidcSettings, user: User, claims: ProviderClaims, actor: Actor
) -> None:
    if not oidc.role_mappings:
        return
    if claims.groups is None:
        log.warning("the ID token of %s has no %r claim: mapped memberships unchanged", user.id, oidc.groups_claim)
        return
    await role_mappings.apply_in(conn, user.id, claims.groups, mappings=oidc.role_mappings, actor=actor)


async def _first_sign_in(conn: AsyncConnection, oidc: OidcSettings, claims: ProviderClaims, actor: Actor) -> str:
    display = oidc.display_name
    email = claims.email
    if email is None:
        raise SsoRefused("no_email", f"{display} did not send an email address for this account.")
    try:
        email = check_email(email)
    except InvalidParameters:
        raise SsoRefused("bad_email", f"{display} sent an email address this service cannot use.") from None
    if not claims.email_verified:
        raise SsoRefused(
            "email_unverified",
            f"{display} has not verified the email address {email}, so it cannot sign you in here.",
        )
    who = _actor(actor, None, email)
    existing = await user_in(conn, email)
    if existing is not None:
        if existing.password_set:
            raise SsoRefused(
                "password_account",
                f"An account with {email} already exists and has a password: sign in with it, then link"
                f" {display} from your profile page.",
            )
        if not existing.active:
            raise SsoRefused("disabled", "This account is disabled: ask the service's operator.")
        who = _actor(actor, existing, email)
        await links.accept_pending_in(conn, email, existing.id, actor=who)
        await _link(conn, claims, existing.id, who)
        return existing.id
    invited = await links.pending_for_in(conn, email)
    if not invited and oidc.auto_create_users and not oidc.domain_allowed(email):
        domain = email.rpartition("@")[2]
        raise SsoRefused("domain_not_allowed", f"Sign-in with {display} is not open to {domain} addresses.")
    if not invited and not oidc.auto_create_users:
        raise SsoRefused(
            "no_account", f"There is no account for {email} here: ask the service's operator or a team to invite you."
        )
    try:
        user_id = await create_user_in(conn, email, actor=who, name=claims.name)
    except Conflict:  # created by a sign-in racing this one
        raise SsoRefused("race", "This account was being created at the same time: try again.") from None
    await conn.execute(update(users).where(users.c.id == user_id).values(origin=ORIGIN))
    who = Actor("user", None, actor.request_id, actor.client, user_id, email)
    await links.accept_pending_in(conn, email, user_id, actor=who)
    await _link(conn, claims, user_id, who)
    return user_id


async def _link(conn: AsyncConnection, claims: ProviderClaims, user_id: str, actor: Actor) -> None:
    try:
        await identities.link_in(conn, claims.issuer, claims.subject, user_id, actor=actor)
    except Conflict:
        raise SsoRefused("race", "This sign-in was completed at the same time in another window: try again.") from None


async def record_refusal(
    engine: AsyncEngine, claims: ProviderClaims | None, refused: SsoRefused, *, actor: Actor
) -> None:
    """A refused sign-in or link, audited (about the email tried, else the subject)."""
    target = (claims.email or claims.subject) if claims is not None else "unknown"
    after = {"reason": refused.reason, **({"issuer": claims.issuer, "subject": claims.subject} if claims else {})}
    async with engine.begin() as conn:
        await audit.record(conn, actor, "user.sso_refused", team_id=None, target=target.lower()[:120], after=after)
