"""Setup, password-reset and invitation links: single use, expiring, revocable, stored as SHA-256.

A link's token is 256 random bits in its URL (`/console/setup/{token}`, `/console/reset/{token}`,
`/console/invite/{token}`); only its digest is stored, so a database reader cannot use one. Redeeming is a
compare-and-set on "not used, not revoked, not expired" in the transaction that does what the link is for,
so a link works once even when two requests race. A used, revoked, expired or unknown link is `Gone` (410:
`This link is no longer valid`). A new setup or reset link revokes the person's earlier unused ones.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit
from modelport.accounts.audit import Actor
from modelport.accounts.members import add_member_in, check_role, member_in
from modelport.accounts.tables import invitations, teams, user_links, users
from modelport.accounts.users import (
    FIRST_OPERATOR_EMAIL,
    check_email,
    check_name,
    create_user_in,
    email_key,
    end_person_sessions_in,
    set_password_in,
    user_in,
)
from modelport.clock import now_ms
from modelport.errors import Conflict, Gone, InvalidParameters, NotFound
from modelport.ids import new_id

NO_LONGER_VALID = "This link is no longer valid"
LINK_KINDS = ("setup", "reset")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class IssuedLink:
    token: str
    expires_at_ms: int


async def issue_link_in(conn: AsyncConnection, user_id: str, kind: str, *, lifetime_ms: int) -> IssuedLink:
    """A new setup or reset link for the person (their earlier unused links of any kind stop working)."""
    assert kind in LINK_KINDS
    now = now_ms()
    await conn.execute(
        update(user_links)
        .where(user_links.c.user_id == user_id, user_links.c.used_at_ms.is_(None), user_links.c.revoked_at_ms.is_(None))
        .values(revoked_at_ms=now)
    )
    token = new_token()
    expires = now + lifetime_ms
    await conn.execute(
        insert(user_links).values(
            token_hash=digest(token), user_id=user_id, kind=kind, created_at_ms=now, expires_at_ms=expires
        )
    )
    return IssuedLink(token, expires)


async def issue_link(
    engine: AsyncEngine, user_id: str, kind: str, *, lifetime_ms: int, actor: Actor | None, team_id: str | None = None
) -> IssuedLink:
    """`team_id`: the team whose owner or admin made the link (its audit log shows the event)."""
    async with engine.begin() as conn:
        link = await issue_link_in(conn, user_id, kind, lifetime_ms=lifetime_ms)
        after = {"expires_at": link.expires_at_ms // 1000}
        await audit.record(conn, actor, f"user.{kind}_link", team_id=team_id, target=user_id, after=after)
    return link


async def link_user(engine: AsyncEngine, token: str) -> tuple[str, str]:
    """The (user id, kind) of a live setup or reset link; Gone when it is not (nothing is used up)."""
    async with engine.connect() as conn:
        row = (await conn.execute(select(user_links).where(user_links.c.token_hash == digest(token)))).first()
    if row is None or row.used_at_ms is not None or row.revoked_at_ms is not None or row.expires_at_ms <= now_ms():
        raise Gone(NO_LONGER_VALID)
    return row.user_id, row.kind


async def redeem_link(
    engine: AsyncEngine,
    token: str,
    password: str,
    *,
    name: str | None = None,
    email: str | None = None,
    actor_client: str | None = None,
) -> str:
    """Use a setup or reset link: set the person's password (and name; the first operator's email), end
    their other sessions (a reset is often because someone else may know the old one); returns the user id."""
    async with engine.begin() as conn:
        now = now_ms()
        row = (await conn.execute(select(user_links).where(user_links.c.token_hash == digest(token)))).first()
        if row is None:
            raise Gone(NO_LONGER_VALID)
        found = await user_in(conn, row.user_id)
        if found is None or not found.active:
            raise Gone(NO_LONGER_VALID)
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = check_name(name)
        if found.email == FIRST_OPERATOR_EMAIL and not found.password_set:
            # The placeholder becomes the person's account: with their email, never the placeholder's.
            if email is None:
                raise InvalidParameters("email is required: the operator account's own email", param="email")
            changes["email"] = check_email(email)
            changes["email_key"] = email_key(email)
            if await user_in(conn, email) is not None:
                raise Conflict("a user with that email already exists")
        # 400 before the link is used up
        await set_password_in(conn, row.user_id, password, email=changes.get("email", found.email))
        if changes:
            await conn.execute(update(users).where(users.c.id == row.user_id).values(**changes))
        used = await conn.execute(
            update(user_links)
            .where(
                user_links.c.token_hash == digest(token),
                user_links.c.used_at_ms.is_(None),
                user_links.c.revoked_at_ms.is_(None),
                user_links.c.expires_at_ms > now,
            )
            .values(used_at_ms=now)
        )
        if not used.rowcount:
            raise Gone(NO_LONGER_VALID)
        await end_person_sessions_in(conn, row.user_id)
        actor = Actor("user", user_id=found.id, email=changes.get("email", found.email), client=actor_client)
        await audit.record(conn, actor, "user.password", team_id=None, target=found.id, after={"by": row.kind})
    return str(row.user_id)


# Invitations


@dataclass(frozen=True, slots=True)
class Invitation:
    id: str
    team_id: str
    email: str
    role: str
    expires_at_ms: int
    created_by: str | None
    accepted_at_ms: int | None
    revoked_at_ms: int | None
    created_at_ms: int

    @property
    def pending(self) -> bool:
        return self.accepted_at_ms is None and self.revoked_at_ms is None and self.expires_at_ms > now_ms()

    def to_public(self, url: str | None = None) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": self.id,
            "email": self.email,
            "role": self.role,
            "expires_at": self.expires_at_ms // 1000,
            "created_by": self.created_by,
            "accepted_at": None if self.accepted_at_ms is None else self.accepted_at_ms // 1000,
        }
        if url is not None:
            view["url"] = url
        return view


def _invitation(row: Any) -> Invitation:
    return Invitation(
        row.id,
        row.team_id,
        row.email,
        row.role,
        int(row.expires_at_ms),
        row.created_by,
        row.accepted_at_ms,
        row.revoked_at_ms,
        int(row.created_at_ms),
    )


async def invite(
    engine: AsyncEngine,
    team_id: str,
    email: str,
    role: str,
    *,
    lifetime_ms: int,
    actor: Actor | None,
    created_by: str | None = None,
) -> tuple[Invitation, str]:
    """A new invitation and its token (shown once). 409 when the person is already a member."""
    email = check_email(email)
    role = check_role(role)
    token = new_token()
    invitation_id = new_id("inv")
    now = now_ms()
    async with engine.begin() as conn:
        existing = await user_in(conn, email)
        if existing is not None and await member_in(conn, team_id, existing.id) is not None:
            raise Conflict("that person is already a member of this team")
        await conn.execute(
            insert(invitations).values(
                id=invitation_id,
                team_id=team_id,
                email=email,
                role=role,
                token_hash=digest(token),
                created_by=created_by,
                created_at_ms=now,
                expires_at_ms=now + lifetime_ms,
            )
        )
        after = {"email": email, "role": role}
        await audit.record(conn, actor, "invitation.create", team_id=team_id, target=invitation_id, after=after)
    return await get_invitation(engine, invitation_id), token


async def get_invitation(engine: AsyncEngine, invitation_id: str) -> Invitation:
    async with engine.connect() as conn:
        row = (await conn.execute(select(invitations).where(invitations.c.id == invitation_id))).first()
    if row is None:
        raise NotFound(f"no invitation {invitation_id!r}")
    return _invitation(row)


async def list_invitations(engine: AsyncEngine, team_id: str, *, pending_only: bool = False) -> list[Invitation]:
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(invitations).where(invitations.c.team_id == team_id).order_by(invitations.c.created_at_ms)
            )
        ).all()
    found = [_invitation(r) for r in rows]
    return [i for i in found if i.pending] if pending_only else found


async def revoke_invitation(engine: AsyncEngine, invitation_id: str, *, actor: Actor | None) -> Invitation:
    found = await get_invitation(engine, invitation_id)
    async with engine.begin() as conn:
        result = await conn.execute(
            update(invitations)
            .where(
                invitations.c.id == invitation_id,
                invitations.c.accepted_at_ms.is_(None),
                invitations.c.revoked_at_ms.is_(None),
            )
            .values(revoked_at_ms=now_ms())
        )
        if result.rowcount:
            await audit.record(conn, actor, "invitation.revoke", team_id=found.team_id, target=invitation_id)
    return await get_invitation(engine, invitation_id)


async def invitation_by_token(engine: AsyncEngine, token: str) -> Invitation:
    """The pending invitation of a link; Gone when it was used, revoked or has expired."""
    async with engine.connect() as conn:
        row = (await conn.execute(select(invitations).where(invitations.c.token_hash == digest(token)))).first()
    if row is None or not _invitation(row).pending:
        raise Gone(NO_LONGER_VALID)
    return _invitation(row)


async def accept_invitation(
    engine: AsyncEngine,
    token: str,
    *,
    user_id: str | None = None,
    name: str | None = None,
    password: str | None = None,
    client: str | None = None,
) -> tuple[Invitation, str]:
    """Accept an invitation: as the signed-in person `user_id` (whose email must be the invited one), or by
    creating the account (`name`, `password`) when no user has the email. Returns the invitation and the
    member's user id. Gone when the link is not live; 409 when an account exists and nobody signed in."""
    async with engine.begin() as conn:
        now = now_ms()
        row = (await conn.execute(select(invitations).where(invitations.c.token_hash == digest(token)))).first()
        if row is None or not _invitation(row).pending:
            raise Gone(NO_LONGER_VALID)
        invitation = _invitation(row)
        existing = await user_in(conn, invitation.email)
        if user_id is not None:
            if existing is None or existing.id != user_id:
                raise Conflict("this invitation is for another email address: sign in with that one")
            member_id = user_id
            email = existing.email
        else:
            if existing is not None:
                raise Conflict("an account with this email exists: sign in to accept the invitation")
            assert password is not None, "a new account needs a password"
            member_id = await create_user_in(conn, invitation.email, actor=None, name=name, password=password)
            email = invitation.email
        used = await conn.execute(
            update(invitations)
            .where(
                invitations.c.id == invitation.id,
                invitations.c.accepted_at_ms.is_(None),
                invitations.c.revoked_at_ms.is_(None),
                invitations.c.expires_at_ms > now,
            )
            .values(accepted_at_ms=now, accepted_by=member_id)
        )
        if not used.rowcount:
            raise Gone(NO_LONGER_VALID)
        actor = Actor("user", user_id=member_id, email=email, client=client)
        if user_id is None:
            await audit.record(conn, actor, "user.create", team_id=None, target=member_id, after={"email": email})
        await add_member_in(conn, invitation.team_id, member_id, invitation.role, actor=actor)
        await audit.record(
            conn,
            actor,
            "invitation.accept",
            team_id=invitation.team_id,
            target=invitation.id,
            after={"role": invitation.role},
        )
    return await get_invitation(engine, invitation.id), member_id


async def user_email(engine: AsyncEngine, user_id: str) -> str | None:
    async with engine.connect() as conn:
        value = await conn.scalar(select(users.c.email).where(users.c.id == user_id))
    return None if value is None else str(value)


async def team_name(engine: AsyncEngine, team_id: str) -> str:
    async with engine.connect() as conn:
        value = await conn.scalar(select(teams.c.name).where(teams.c.id == team_id))
    return str(value or team_id)


async def pending_for_in(conn: AsyncConnection, email: str) -> list[Invitation]:
    """The live invitations for an email (any team), oldest first."""
    stmt = select(invitations).where(func.lower(invitations.c.email) == email_key(email))
    rows = (await conn.execute(stmt.order_by(invitations.c.created_at_ms))).all()
    return [i for i in (_invitation(r) for r in rows) if i.pending]


async def accept_pending_in(conn: AsyncConnection, email: str, user_id: str, *, actor: Actor) -> list[str]:
    """Accept every live invitation for `email` as `user_id`, in the caller's transaction (a single sign-on
    whose provider verified that email): the teams joined. A team the person is in already is skipped."""
    joined: list[str] = []
    now = now_ms()
    for invitation in await pending_for_in(conn, email):
        used = await conn.execute(
            update(invitations)
            .where(invitations.c.id == invitation.id, invitations.c.accepted_at_ms.is_(None))
            .values(accepted_at_ms=now, accepted_by=user_id)
        )
        if not used.rowcount or await member_in(conn, invitation.team_id, user_id) is not None:
            continue
        await add_member_in(conn, invitation.team_id, user_id, invitation.role, actor=actor)
        after = {"role": invitation.role, "via": "sso"}
        team_id = invitation.team_id
        await audit.record(conn, actor, "invitation.accept", team_id=team_id, target=invitation.id, after=after)
        joined.append(invitation.team_id)
    return joined
