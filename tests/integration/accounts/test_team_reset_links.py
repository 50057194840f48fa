"""A member's password-reset link made by the team's owner or admin (issue 37), through the media app in this
process on SQLite and PostgreSQL: `POST /api/v1/team/members/{user_id}/reset-link` and the members page's
"Reset link" answer the link once, refuse the roles the table refuses (developer, viewer; an admin for an
owner), answer 404 for anyone not in the team and 403 for an account beyond it; the link works once, then
410, and stops at MODELPORT_ACCOUNTS__SETUP_SECONDS."""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import members
from modelport.accounts import service as accounts
from modelport.clock import now_ms
from modelport.team_admin.reset_links import BEYOND_THE_TEAM
from tests.support.media_app import MediaApp, csrf_of, link_path, media_app, post_form

PAGE_REFUSAL = "your role in this team does not allow this"  # the console page's words
REFUSAL = f"Forbidden: {PAGE_REFUSAL}"  # the envelope's message
GONE = "This link is no longer valid"
# MODELPORT_ACCOUNTS__SETUP_SECONDS for these tests: seconds, not the default day, and long enough that a
# loaded machine uses a fresh link within it
LIFETIME_S = 4


@pytest.fixture
async def app(engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MediaApp]:
    monkeypatch.setenv("MODELPORT_ACCOUNTS__SETUP_SECONDS", str(LIFETIME_S))
    async with media_app(engine, tmp_path) as made:
        assert made.services.settings.accounts.setup_seconds == LIFETIME_S
        yield made


def reset_path(user_id: str) -> str:
    return f"/api/v1/team/members/{user_id}/reset-link"


async def test_an_admin_key_makes_a_members_link_that_works_once(app: MediaApp) -> None:
    await app.signed_in("developer")  # a password set: the link is a reset link, not a setup link
    made = await app.api("POST", reset_path(app.user_ids["developer"]))
    assert made.status_code == 200, made.text
    data = made.json()["data"]
    assert set(data) == {"url", "expires_at"}
    assert "/console/reset/" in data["url"]
    events = [e for e in await app.events("user.reset_link") if e["team_id"] == app.team_id]
    assert len(events) == 1, events
    assert events[0]["target"] == app.user_ids["developer"]
    assert events[0]["actor"]["kind"] == "team_key" and events[0]["actor"]["key_id"] == app.admin_key_id
    assert events[0]["after"] == {"expires_at": data["expires_at"]}

    person = await app.open_link(data["url"], password="another long passphrase 7")
    assert (await person.get("/console/")).status_code == 200
    used = app.client()
    gone = await used.get(link_path(data["url"]))
    assert gone.status_code == 410 and GONE in gone.text
    token = csrf_of((await used.get("/console/sign-in")).text)
    form = {"password": "x" * 20, "password_again": "x" * 20, "csrf_token": token}
    again = await used.post(link_path(data["url"]), data=form)
    assert again.status_code == 410 and GONE in again.text
    # The new password is the one that signs in.
    sign_in = app.client()
    page = await sign_in.get("/console/sign-in")
    form = {"email": app.emails["developer"], "password": "another long passphrase 7"}
    answer = await post_form(sign_in, "/console/sign-in", form, page="/console/sign-in")
    assert page.status_code == 200 and answer.status_code == 303, answer.text


async def test_the_api_refuses_what_the_table_refuses(app: MediaApp) -> None:
    for target in ("viewer", "owner"):
        refused = await app.api("POST", reset_path(app.user_ids[target]), key=app.member_key)  # a developer
        assert refused.status_code == 403 and refused.json()["message"] == REFUSAL, refused.text
    to_owner = await app.api("POST", reset_path(app.user_ids["owner"]))
    assert to_owner.status_code == 403 and to_owner.json()["message"] == REFUSAL, to_owner.text

    assert (await app.api("POST", reset_path("usr_nobody"))).json()["message"] == (
        "Not found: no member 'usr_nobody' in this team"
    )
    elsewhere = await accounts.create_team(app.engine, "elsewhere", tier="free")
    for name, team in (("loner", None), ("stranger", elsewhere.id)):  # in no team; in another team only
        await app.person(name, None if team is None else "viewer", team=team)
        not_ours = await app.api("POST", reset_path(app.user_ids[name]))
        assert not_ours.status_code == 404, not_ours.text
        assert not_ours.json()["message"] == f"Not found: no member {app.user_ids[name]!r} in this team"

    await app.person("operator", "developer", operator_role="operator")
    as_operator = await app.api("POST", reset_path(app.user_ids["operator"]))
    assert as_operator.status_code == 403 and as_operator.json()["message"] == f"Forbidden: {BEYOND_THE_TEAM}"
    await members.add_member(app.engine, elsewhere.id, app.user_ids["viewer"], "owner", actor=None)
    in_two = await app.api("POST", reset_path(app.user_ids["viewer"]))
    assert in_two.status_code == 403 and in_two.json()["message"] == f"Forbidden: {BEYOND_THE_TEAM}"
    # Nothing refused made a link or an event.
    assert [e for e in await app.events("user.reset_link") if e["team_id"] is not None] == []
    assert [e for e in await app.events("user.setup_link") if e["team_id"] is not None] == []


async def test_the_members_page_shows_the_link_once_to_owners_and_admins(app: MediaApp) -> None:
    sessions = {role: await app.signed_in(role) for role in ("owner", "admin", "developer", "viewer")}
    target = app.user_ids["developer"]
    for role in ("developer", "viewer"):
        members_page = await sessions[role].get("/console/members")
        assert members_page.status_code == 200 and "/reset-link" not in members_page.text
        refused = await post_form(sessions[role], f"/console/members/{target}/reset-link", {}, page="/console/")
        assert refused.status_code == 403 and PAGE_REFUSAL in html.unescape(refused.text), refused.text
    admin_to_owner = await post_form(
        sessions["admin"], f"/console/members/{app.user_ids['owner']}/reset-link", {}, page="/console/members"
    )
    assert admin_to_owner.status_code == 403 and PAGE_REFUSAL in html.unescape(admin_to_owner.text)
    unknown = await post_form(sessions["admin"], "/console/members/usr_nobody/reset-link", {}, page="/console/")
    assert unknown.status_code == 404

    for role, person in (("owner", "admin"), ("admin", "developer")):
        page = await sessions[role].get("/console/members")
        assert f"/console/members/{app.user_ids[person]}/reset-link" in page.text
        shown = await post_form(
            sessions[role], f"/console/members/{app.user_ids[person]}/reset-link", {}, page="/console/members"
        )
        assert shown.status_code == 201, shown.text
        url = shown.text.split('<pre class="secret" id="reset-url">', 1)[1].split("</pre>", 1)[0]
        assert app.emails[person] in shown.text and "/console/reset/" in url
        assert url not in (await sessions[role].get("/console/members")).text  # shown once
        event = next(e for e in await app.events("user.reset_link") if e["target"] == app.user_ids[person])
        assert event["team_id"] == app.team_id
        assert event["actor"]["kind"] == "user" and event["actor"]["user_id"] == app.user_ids[role]
        assert (await app.client().get(link_path(html.unescape(url)))).status_code == 200
    # The form without its CSRF token is refused and makes nothing.
    before = len(await app.events("user.reset_link"))
    bare = await sessions["owner"].post(f"/console/members/{target}/reset-link", data={})
    assert bare.status_code == 403 and len(await app.events("user.reset_link")) == before


async def test_a_link_stops_at_the_setup_lifetime(app: MediaApp) -> None:
    # Real time, the setting's seconds: the link and a form opened in time work until `expires_at`, then 410.
    await app.signed_in("developer")
    before = now_ms()
    made = (await app.api("POST", reset_path(app.user_ids["developer"]))).json()["data"]
    assert before // 1000 + LIFETIME_S <= made["expires_at"] <= now_ms() // 1000 + LIFETIME_S
    path = link_path(made["url"])
    late = app.client()
    page = await late.get(path)
    assert page.status_code == 200, page.text
    # Past the end (expires_at is in whole seconds, rounded down): wait for it, never for less.
    await asyncio.sleep(((made["expires_at"] + 1) * 1000 - now_ms()) / 1000 + 0.1)
    gone = await app.client().get(path)
    assert gone.status_code == 410 and GONE in gone.text
    # Nor does the form opened in time work once the link has expired.
    form = {"password": "a late long passphrase 9", "password_again": "a late long passphrase 9"}
    answer = await late.post(path, data={**form, "csrf_token": csrf_of(page.text)})
    assert answer.status_code == 410 and GONE in answer.text


async def test_a_new_link_revokes_the_earlier_one(app: MediaApp) -> None:
    first = (await app.api("POST", reset_path(app.user_ids["viewer"]))).json()["data"]["url"]
    second = (await app.api("POST", reset_path(app.user_ids["viewer"]))).json()["data"]["url"]
    assert (await app.client().get(link_path(first))).status_code == 410
    assert (await app.client().get(link_path(second))).status_code == 200
