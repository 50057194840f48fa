"""A member's password-reset link made by the team's owner or admin (issue 37): the team API's
`POST /api/v1/team/members/{user_id}/reset-link` and the console's members page make it here, so both
refuse alike. The link is the operator's kind (`operator.people.People.reset_link`: a setup link for someone
who never set a password), lives `MODELPORT_ACCOUNTS__SETUP_SECONDS`, is mailed when SMTP is set and is
audited in the team with its actor."""

from __future__ import annotations

from modelport.accounts import members, users
from modelport.accounts.audit import Actor
from modelport.accounts.auth import AuthContext
from modelport.accounts.links import IssuedLink
from modelport.accounts.permissions import Permission, check_grant, check_permission
from modelport.errors import Forbidden, NotFound
from modelport.operator.people import People
from modelport.services import Services

# The person's password opens more than this team: a team's owner or admin could take over an operator
# account, or another team's membership, with a link they made.
BEYOND_THE_TEAM = "this person's account is an operator's or in another team too: an operator makes its reset link"


async def member_reset_link(
    services: Services, auth: AuthContext, actor: Actor, user_id: str
) -> tuple[str, IssuedLink]:
    """(url, link) for a member of `auth`'s team. 403 for a role without members, for an admin and an owner,
    and for an account beyond the team; 404 for anyone not a member of this team."""
    check_permission(auth, Permission.MANAGE_MEMBERS)
    try:
        found = await members.get_member(services.db, auth.team_id, user_id[:64])
    except NotFound:
        raise NotFound(f"no member {user_id[:64]!r} in this team") from None
    check_grant(auth, found.role)  # an admin never makes one for an owner
    person = await users.get_user(services.db, found.user_id)
    if person.operator_role is not None or any(team_id != auth.team_id for team_id, _ in person.teams):
        raise Forbidden(BEYOND_THE_TEAM)
    return await People.for_services(services, actor).reset_link(found.user_id, team_id=auth.team_id)
