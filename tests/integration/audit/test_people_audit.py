"""The audit log of people's changes (issue 37), through the media app in this process on SQLite and
PostgreSQL: invitations (create, revoke, accept), a member's role change and removal, the second factor on
and off, a password change, a reset link and its use each write one event with its actor (the person of
a console session, or the admin key on the team API), action, target and team."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pyotp
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import links
from tests.support.media_app import PASSWORD, MediaApp, csrf_of, link_path, media_app, post_form


@pytest.fixture
async def app(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[MediaApp]:
    async with media_app(engine, tmp_path) as made:
        yield made


async def one_event(app: MediaApp, action: str, target: str) -> dict[str, Any]:
    found = [e for e in await app.events(action) if e["target"] == target]
    assert len(found) == 1, (action, target, await app.events(action))
    return found[0]


def by_person(app: MediaApp, event: dict[str, Any], name: str) -> bool:
    actor = event["actor"]
    return bool(
        actor["kind"] == "user" and actor["user_id"] == app.user_ids[name] and actor["email"] == app.emails[name]
    )


def by_admin_key(app: MediaApp, event: dict[str, Any]) -> bool:
    return bool(event["actor"]["kind"] == "team_key" and event["actor"]["key_id"] == app.admin_key_id)


async def invitation_id(app: MediaApp, email: str) -> str:
    found = [i for i in await links.list_invitations(app.engine, app.team_id) if i.email == email]
    assert len(found) == 1, found
    return found[0].id


async def test_invitations_create_revoke_and_accept_are_audited(app: MediaApp) -> None:
    owner = await app.signed_in("owner")
    made = await post_form(
        owner, "/console/members/invite", {"email": "new@team.example", "role": "viewer"}, page="/console/members"
    )
    assert made.status_code == 201, made.text
    url = made.text.split('<pre class="secret" id="invited-url">', 1)[1].split("</pre>", 1)[0]
    first = await invitation_id(app, "new@team.example")
    created = await one_event(app, "invitation.create", first)
    assert by_person(app, created, "owner") and created["team_id"] == app.team_id
    assert created["after"] == {"email": "new@team.example", "role": "viewer"}

    revoked = await post_form(owner, f"/console/members/invitations/{first}/revoke", {}, page="/console/members")
    assert revoked.status_code == 303, revoked.text
    event = await one_event(app, "invitation.revoke", first)
    assert by_person(app, event, "owner") and event["team_id"] == app.team_id
    assert (await app.client().get(link_path(url))).status_code == 410

    by_key = await app.api("POST", "/api/v1/team/invitations", json={"email": "next@team.example", "role": "developer"})
    assert by_key.status_code == 200, by_key.text
    second = by_key.json()["data"]["id"]
    event = await one_event(app, "invitation.create", second)
    assert by_admin_key(app, event) and event["team_id"] == app.team_id
    by_key_revoke = await app.api("DELETE", f"/api/v1/team/invitations/{second}")
    assert by_key_revoke.status_code == 200 and by_admin_key(app, await one_event(app, "invitation.revoke", second))

    third_answer = await app.api(
        "POST", "/api/v1/team/invitations", json={"email": "joins@team.example", "role": "developer"}
    )
    third, third_url = third_answer.json()["data"]["id"], third_answer.json()["data"]["url"]
    joining = app.client()
    page = await joining.get(link_path(third_url))
    assert page.status_code == 200, page.text
    form = {"name": "Joins", "password": PASSWORD, "password_again": PASSWORD, "csrf_token": csrf_of(page.text)}
    assert (await joining.post(link_path(third_url), data=form)).status_code == 303
    accepted = await one_event(app, "invitation.accept", third)
    listed = (await app.api("GET", "/api/v1/team/members")).json()["data"]["members"]
    joined = [m["user_id"] for m in listed if m["email"] == "joins@team.example"]
    assert len(joined) == 1
    assert accepted["actor"] == {"kind": "user", "key_id": None, "user_id": joined[0], "email": "joins@team.example"}
    assert accepted["team_id"] == app.team_id and accepted["after"] == {"role": "developer"}
    added = await one_event(app, "member.add", joined[0])
    assert added["actor"]["user_id"] == joined[0] and added["after"] == {"role": "developer"}


async def test_role_changes_and_removals_are_audited(app: MediaApp) -> None:
    owner = await app.signed_in("owner")
    target = app.user_ids["developer"]
    changed = await post_form(owner, f"/console/members/{target}/role", {"role": "viewer"}, page="/console/members")
    assert changed.status_code == 303, changed.text
    event = await one_event(app, "member.role", target)
    assert by_person(app, event, "owner") and event["team_id"] == app.team_id
    assert (event["before"], event["after"]) == ({"role": "developer"}, {"role": "viewer"})

    other = app.user_ids["viewer"]
    by_key = await app.api("PATCH", f"/api/v1/team/members/{other}", json={"role": "developer"})
    assert by_key.status_code == 200, by_key.text
    event = await one_event(app, "member.role", other)
    assert by_admin_key(app, event) and (event["before"], event["after"]) == ({"role": "viewer"}, {"role": "developer"})

    removed = await post_form(owner, f"/console/members/{target}/remove", {}, page="/console/members")
    assert removed.status_code == 303, removed.text
    event = await one_event(app, "member.remove", target)
    assert by_person(app, event, "owner") and event["team_id"] == app.team_id and event["before"] == {"role": "viewer"}

    by_key_remove = await app.api("DELETE", f"/api/v1/team/members/{other}")
    assert by_key_remove.status_code == 200, by_key_remove.text
    event = await one_event(app, "member.remove", other)
    assert by_admin_key(app, event) and event["before"] == {"role": "developer"}
    # A refused change writes nothing: an admin key cannot remove the owner.
    refused = await app.api("DELETE", f"/api/v1/team/members/{app.user_ids['owner']}")
    assert refused.status_code == 403
    assert [e for e in await app.events("member.remove") if e["target"] == app.user_ids["owner"]] == []


async def second_factor_secret(client: httpx.AsyncClient) -> str:
    started = await post_form(client, "/console/profile/second-factor/start", {}, page="/console/profile")
    assert started.status_code == 200, started.text
    return started.text.split('<pre class="secret" id="totp-secret">', 1)[1].split("</pre>", 1)[0].strip()


async def test_the_second_factor_and_passwords_are_audited(app: MediaApp) -> None:
    person = await app.signed_in("developer")
    me = app.user_ids["developer"]
    secret = await second_factor_secret(person)
    assert await app.events("user.second_factor_on") == []  # started is not on
    code = pyotp.TOTP(secret).now()
    on = await post_form(person, "/console/profile/second-factor/confirm", {"code": code}, page="/console/profile")
    assert on.status_code == 200 and "The second factor is on." in on.text, on.text
    event = await one_event(app, "user.second_factor_on", me)
    assert by_person(app, event, "developer") and event["team_id"] is None

    off = await post_form(person, "/console/profile/second-factor/off", {"password": PASSWORD}, page="/console/profile")
    assert off.status_code == 200 and "The second factor is off." in off.text, off.text
    assert by_person(app, await one_event(app, "user.second_factor_off", me), "developer")

    new = "a changed long passphrase 8"
    form = {"current_password": PASSWORD, "new_password": new, "new_password_again": new}
    changed = await post_form(person, "/console/profile/password", form, page="/console/profile")
    assert changed.status_code == 200 and "Password changed" in changed.text, changed.text
    events = [e for e in await app.events("user.password") if e["target"] == me]
    by_self = [e for e in events if e["after"] == {"by": "self"}]
    assert len(by_self) == 1 and by_person(app, by_self[0], "developer")

    # A reset link made by the team's admin key, then used: two events, each with its own actor.
    made = await app.api("POST", f"/api/v1/team/members/{me}/reset-link")
    assert made.status_code == 200, made.text
    link_event = await one_event(app, "user.reset_link", me)
    assert by_admin_key(app, link_event) and link_event["team_id"] == app.team_id
    await app.open_link(made.json()["data"]["url"], password="a reset long passphrase 5")
    by_reset = [e for e in await app.events("user.password") if e["target"] == me and e["after"] == {"by": "reset"}]
    assert len(by_reset) == 1 and by_person(app, by_reset[0], "developer")
