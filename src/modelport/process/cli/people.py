"""`modelport admin user ...`, `admin member ...`, `admin invite`: people, through `operator.people.People`
(the admin API's and the operator console's service), audited as `operator_cli`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from modelport.accounts.audit import Actor
from modelport.accounts.permissions import OPERATOR_ROLES, TEAM_ROLES
from modelport.accounts.users import User
from modelport.operator.people import People
from modelport.process.cli.common import emit, load, run_db

T = TypeVar("T")


def people(action: Callable[[People], Awaitable[T]]) -> T:
    settings = load()
    return run_db(settings, lambda engine: action(People(engine, settings, actor=Actor("operator_cli"))))


def _line(user: User) -> str:
    teams = ", ".join(f"{team}:{role}" for team, role in user.teams) or "no teams"
    operator = f"  {user.operator_role}" if user.operator_role else ""
    return f"{user.id}  {user.email}  {user.status}{operator}  ({teams})"


@click.group()
def user() -> None:
    """People: console accounts."""


@user.command("create")
@click.argument("email")
@click.option("--name", default=None)
@click.option("--operator-role", type=click.Choice(OPERATOR_ROLES), default=None)
@click.option("--team", "team_ref", default=None, metavar="TEAM")
@click.option("--role", type=click.Choice(TEAM_ROLES), default=None, help="Their role in --team (default developer).")
@click.option("--json", "as_json", is_flag=True)
def user_create(
    email: str, name: str | None, operator_role: str | None, team_ref: str | None, role: str | None, as_json: bool
) -> None:
    """Create an account and print its setup link (where the person sets a password)."""
    if role is not None and team_ref is None:
        raise click.UsageError("--role needs --team")
    found, url, expires_ms = people(
        lambda p: p.create_user(email, name=name, operator_role=operator_role, team=team_ref, role=role)
    )
    data = {**found.to_public(), "setup_url": url, "setup_expires_at": expires_ms // 1000}
    emit(as_json, data, f"created {_line(found)}\nsetup link (works once): {url}")


@user.command("list")
@click.option("--json", "as_json", is_flag=True)
def user_list(as_json: bool) -> None:
    found = people(lambda p: p.users())
    emit(as_json, {"users": [u.to_public() for u in found]}, "\n".join(_line(u) for u in found) or "(no users)")


@user.command("show")
@click.argument("email")
@click.option("--json", "as_json", is_flag=True)
def user_show(email: str, as_json: bool) -> None:
    found = people(lambda p: p.user(email))
    emit(as_json, found.to_public(), _line(found))


def _set(email: str, changes: dict[str, Any], as_json: bool, verb: str) -> None:
    found = people(lambda p: p.update_user(email, changes))
    emit(as_json, found.to_public(), f"{verb} {_line(found)}")


@user.command("disable")
@click.argument("email")
@click.option("--json", "as_json", is_flag=True)
def user_disable(email: str, as_json: bool) -> None:
    """Disable an account: its sessions end and its personal keys are revoked at once."""
    _set(email, {"status": "disabled"}, as_json, "disabled")


@user.command("enable")
@click.argument("email")
@click.option("--json", "as_json", is_flag=True)
def user_enable(email: str, as_json: bool) -> None:
    _set(email, {"status": "active"}, as_json, "enabled")


@user.command("reset-link")
@click.argument("email")
@click.option("--json", "as_json", is_flag=True)
def user_reset_link(email: str, as_json: bool) -> None:
    """Print a password-reset link (mailed too when MODELPORT_SMTP__HOST is set)."""
    url, link = people(lambda p: p.reset_link(email))
    emit(as_json, {"url": url, "expires_at": link.expires_at_ms // 1000}, f"reset link (works once): {url}")


@click.group()
def member() -> None:
    """Team members: add, change role, remove."""


@member.command("add")
@click.argument("team_ref", metavar="TEAM")
@click.argument("email")
@click.option("--role", type=click.Choice(TEAM_ROLES), required=True)
@click.option("--json", "as_json", is_flag=True)
def member_add(team_ref: str, email: str, role: str, as_json: bool) -> None:
    found = people(lambda p: p.add_member(team_ref, email, role))
    emit(as_json, found.to_public(), f"{found.email} is now {found.role} of {team_ref}")


@member.command("set-role")
@click.argument("team_ref", metavar="TEAM")
@click.argument("email")
@click.option("--role", type=click.Choice(TEAM_ROLES), required=True)
@click.option("--json", "as_json", is_flag=True)
def member_set_role(team_ref: str, email: str, role: str, as_json: bool) -> None:
    found = people(lambda p: p.set_role(team_ref, email, role))
    emit(as_json, found.to_public(), f"{found.email} is now {found.role} of {team_ref}")


@member.command("remove")
@click.argument("team_ref", metavar="TEAM")
@click.argument("email")
@click.option("--json", "as_json", is_flag=True)
def member_remove(team_ref: str, email: str, as_json: bool) -> None:
    """Remove a member: their sessions in the team end and their personal keys of it are revoked."""
    found = people(lambda p: p.remove_member(team_ref, email))
    emit(as_json, {**found.to_public(), "removed": True}, f"removed {found.email} from {team_ref}")


@click.command("invite")
@click.argument("team_ref", metavar="TEAM")
@click.argument("email")
@click.option("--role", type=click.Choice(TEAM_ROLES), required=True)
@click.option("--json", "as_json", is_flag=True)
def invite(team_ref: str, email: str, role: str, as_json: bool) -> None:
    """Invite EMAIL to TEAM and print the invitation link (shown once; mailed too when SMTP is set)."""
    invitation, url = people(lambda p: p.invite(team_ref, email, role))
    emit(as_json, invitation.to_public(url), f"invitation {invitation.id} for {invitation.email}: {url}")
