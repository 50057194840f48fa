"""The operator's verbs about people: users, team members and invitations (admin API, CLI, operator console).

Like `verbs.Operator`, built with the process's key cache when it runs in a serving process, so removing a
member or disabling a user (whose personal keys are revoked) empties the cache at once in this process.
Links are answered as URLs on the public media host (`/console/setup/...`, `/console/invite/...`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import links, mail, members, users
from modelport.accounts import service as accounts
from modelport.accounts.audit import Actor
from modelport.accounts.auth import Authenticator
from modelport.accounts.links import Invitation, IssuedLink
from modelport.accounts.members import Member
from modelport.accounts.users import User
from modelport.errors import Conflict, NotFound
from modelport.services import Services
from modelport.settings import Settings


def link_url(settings: Settings, kind: str, token: str) -> str:
    return f"{settings.effective_public_media_url.rstrip('/')}/console/{kind}/{token}"


@dataclass(frozen=True, slots=True)
class People:
    engine: AsyncEngine
    settings: Settings
    auth: Authenticator | None = None
    actor: Actor | None = None

    @classmethod
    def for_services(cls, services: Services, actor: Actor) -> People:
        return cls(services.db, services.settings, auth=services.auth, actor=actor)

    def _access_changed(self) -> None:
        if self.auth is not None:
            self.auth.evict_all()

    @property
    def _setup_ms(self) -> int:
        return self.settings.accounts.setup_seconds * 1000

    # Users

    async def create_user(
        self,
        email: str,
        *,
        name: str | None = None,
        operator_role: str | None = None,
        team: str | None = None,
        role: str | None = None,
    ) -> tuple[User, str, int]:
        """A new user (and membership when `team` is given) and their setup link: (user, url, expires_ms)."""
        team_id = None
        if team is not None:
            team_id = (await accounts.get_team(self.engine, team)).id
            members.check_role(role or "developer")
        async with self.engine.begin() as conn:
            user_id = await users.create_user_in(conn, email, actor=self.actor, name=name, operator_role=operator_role)
            if team_id is not None:
                await members.add_member_in(conn, team_id, user_id, role or "developer", actor=self.actor)
            link = await links.issue_link_in(conn, user_id, "setup", lifetime_ms=self._setup_ms)
        return (
            await users.get_user(self.engine, user_id),
            link_url(self.settings, "setup", link.token),
            link.expires_at_ms,
        )

    async def users(self) -> list[User]:
        return await users.list_users(self.engine)

    async def user(self, ref: str) -> User:
        return await users.get_user(self.engine, ref)

    async def update_user(self, ref: str, changes: dict[str, Any]) -> User:
        updated = await users.update_user(self.engine, ref, changes, actor=self.actor)
        self._access_changed()
        return updated

    async def reset_link(self, ref: str, *, team_id: str | None = None) -> tuple[str, IssuedLink]:
        """A password-reset link (a setup link for someone who never set a password); mailed when SMTP is set.
        `team_id`: made by that team's owner or admin (`team_admin.reset_links`), audited in the team."""
        found = await users.get_user(self.engine, ref)
        kind = "reset" if found.password_set else "setup"
        link = await links.issue_link(
            self.engine, found.id, kind, lifetime_ms=self._setup_ms, actor=self.actor, team_id=team_id
        )
        url = link_url(self.settings, kind, link.token)
        if mail.mail_configured(self.settings.smtp):
            subject, body = mail.reset_mail(url)
            await mail.send_mail(self.settings.smtp, found.email, subject, body)
        return url, link

    # Members

    async def members(self, team: str) -> list[Member]:
        found = await accounts.get_team(self.engine, team)
        return await members.list_members(self.engine, found.id)

    async def add_member(self, team: str, email: str, role: str) -> Member:
        found = await accounts.get_team(self.engine, team)
        person = await users.get_user(self.engine, email)
        return await members.add_member(self.engine, found.id, person.id, role, actor=self.actor)

    async def set_role(self, team: str, user_ref: str, role: str) -> Member:
        found = await accounts.get_team(self.engine, team)
        person = await users.get_user(self.engine, user_ref)
        return await members.set_role(self.engine, found.id, person.id, role, actor=self.actor)

    async def remove_member(self, team: str, user_ref: str) -> Member:
        found = await accounts.get_team(self.engine, team)
        person = await users.get_user(self.engine, user_ref)
        removed = await members.remove_member(self.engine, found.id, person.id, actor=self.actor)
        self._access_changed()
        return removed

    # Invitations

    async def invite(
        self, team: str, email: str, role: str, *, created_by: str | None = None
    ) -> tuple[Invitation, str]:
        """A new invitation and its URL (shown once); mailed too when SMTP is set."""
        found = await accounts.get_team(self.engine, team)
        invitation, token = await links.invite(
            self.engine,
            found.id,
            email,
            role,
            lifetime_ms=self.settings.accounts.invite_seconds * 1000,
            actor=self.actor,
            created_by=created_by,
        )
        url = link_url(self.settings, "invite", token)
        if mail.mail_configured(self.settings.smtp):
            subject, body = mail.invitation_mail(found.name, invitation.role, url, invitation.expires_at_ms // 1000)
            await mail.send_mail(self.settings.smtp, invitation.email, subject, body)
        return invitation, url

    async def invitations(self, team: str) -> list[Invitation]:
        found = await accounts.get_team(self.engine, team)
        return await links.list_invitations(self.engine, found.id)

    async def invitation(self, invitation_id: str) -> Invitation:
        return await links.get_invitation(self.engine, invitation_id)

    async def revoke_invitation(self, invitation_id: str) -> Invitation:
        return await links.revoke_invitation(self.engine, invitation_id, actor=self.actor)

    async def first_operator_link(self) -> str | None:
        """While no user has an operator role: a setup link for a first operator account (`serve`'s banner),
        made for a placeholder account whose setup page asks for the person's own email."""
        if await users.any_operator(self.engine):
            return None
        try:
            found = await users.get_user(self.engine, FIRST_OPERATOR_EMAIL)
        except NotFound:
            try:
                async with self.engine.begin() as conn:
                    await users.create_user_in(
                        conn, FIRST_OPERATOR_EMAIL, actor=None, name="First operator", operator_role="operator"
                    )
            except Conflict:
                pass  # replicas starting together on one database: another one made it first
            found = await users.get_user(self.engine, FIRST_OPERATOR_EMAIL)
        link = await links.issue_link(self.engine, found.id, "setup", lifetime_ms=self._setup_ms, actor=None)
        return link_url(self.settings, "setup", link.token)


# The first operator account's email until its setup (the setup page asks for the real one).
FIRST_OPERATOR_EMAIL = users.FIRST_OPERATOR_EMAIL
