"""The operator console's people actions in this process (the media app over httpx's ASGI transport, on
SQLite and PostgreSQL), signed in as operator accounts (issue 37): an `operator` creates, renames, disables
and re-enables users, changes operator roles, makes reset links, adds, re-roles and removes a team's members
and invites and revokes; each is audited with the operator as the actor. An `operator_viewer` sees every
page (each of the navigation's, a team's, a catalog entry's read-only, a request's) without a POST form but
sign-out and the key search, finds keys by the whole key, prefix or id, and every action (people, teams,
keys, the catalog) is the 403 page and changes nothing; a form without the CSRF token is refused; removing or
demoting the last owner is shown as `Conflict: a team keeps at least one owner` (409)."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import links, members, users
from modelport.accounts import service as accounts
from modelport.accounts.audit import Actor, AuditFilter, list_events
from modelport.accounts.models import Team
from modelport.apps.assemble import build_services
from modelport.apps.media import create_media_app
from modelport.clock import now_ms
from modelport.console.operator.common import OPERATOR_NAV
from modelport.operator.people import People
from modelport.operator.verbs import Operator
from modelport.requestlog.tables import request_logs
from modelport.services import Services
from modelport.settings import Settings
from tests.support.accounts import PASSWORD, console_path
from tests.support.console import csrf_of

REFUSAL = "your operator role does not allow this"
LAST_OWNER = "Conflict: a team keeps at least one owner"
_SHOWN = re.compile(r'id="(?:shown|invited)-url">([^<]+)<')


@dataclass
class Console:
    services: Services
    people: People
    transport: httpx.ASGITransport

    async def signed_in(self, email: str, operator_role: str) -> httpx.AsyncClient:
        """A new client signed in as a new operator account (its setup link, then its password)."""
        _, url, _ = await self.people.create_user(email, operator_role=operator_role)
        client = httpx.AsyncClient(transport=self.transport, base_url="http://media.test/console")
        page = await client.get(console_path(url))
        form = {"password": PASSWORD, "password_again": PASSWORD, "csrf_token": csrf_of(page.text)}
        answer = await client.post(console_path(url), data=form)
        assert answer.status_code == 303, answer.text
        return client

    async def team(self, name: str) -> Team:
        return await accounts.create_team(self.services.db, name, tier=self.services.settings.tiers[0].name)


@pytest.fixture
async def console(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Console]:
    settings = Settings(data_dir=tmp_path)
    services = build_services(settings, engine=engine)
    try:
        yield Console(services, People(engine, settings), httpx.ASGITransport(app=create_media_app(services)))
    finally:
        await services.aclose()


@pytest.fixture
async def operator(console: Console) -> AsyncIterator[httpx.AsyncClient]:
    client = await console.signed_in("ops@example.com", "operator")
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def viewer(console: Console) -> AsyncIterator[httpx.AsyncClient]:
    client = await console.signed_in("watcher@example.com", "operator_viewer")
    try:
        yield client
    finally:
        await client.aclose()


async def post(client: httpx.AsyncClient, path: str, data: dict[str, str], *, page: str) -> httpx.Response:
    """A form posted as the page `page` offers it: with that page's CSRF token."""
    token = csrf_of((await client.get(page)).text)
    return await client.post(path, data={**data, "csrf_token": token})


def shown_url(answer: httpx.Response) -> str:
    found = _SHOWN.search(answer.text)
    assert found is not None, answer.text
    return html.unescape(found.group(1))


async def actions_by(console: Console, email: str) -> list[str]:
    events = await list_events(console.services.db, AuditFilter(actor_kind="user"), limit=100)
    return sorted({e["action"] for e in events if e["actor"]["email"] == email})


async def test_an_operator_manages_users_members_and_invitations(console: Console, operator: httpx.AsyncClient) -> None:
    db = console.services.db
    team = await console.team("crew")
    made = await post(
        operator,
        "/admin/users",
        {"email": "Olive@Example.com", "name": "Olive", "team": "crew", "role": "owner"},
        page="/admin/users",
    )
    assert made.status_code == 201 and "/console/setup/" in shown_url(made)
    olive = await users.get_user(db, "olive@example.com")
    assert olive.name == "Olive" and olive.teams == ((team.id, "owner"),)
    # The link was in that answer only: the users page after it shows none.
    assert _SHOWN.search((await operator.get("/admin/users")).text) is None

    renamed = await post(operator, f"/admin/users/{olive.id}/name", {"name": "Olive O."}, page="/admin/users")
    assert renamed.status_code == 303 and (await users.get_user(db, olive.id)).name == "Olive O."
    off = await post(operator, f"/admin/users/{olive.id}/status", {"status": "disabled"}, page="/admin/users")
    assert off.status_code == 303 and (await users.get_user(db, olive.id)).status == "disabled"
    on = await post(operator, f"/admin/users/{olive.id}/status", {"status": "active"}, page="/admin/users")
    assert on.status_code == 303 and (await users.get_user(db, olive.id)).status == "active"
    role = await post(
        operator, f"/admin/users/{olive.id}/operator-role", {"operator_role": "operator_viewer"}, page="/admin/users"
    )
    assert role.status_code == 303 and (await users.get_user(db, olive.id)).operator_role == "operator_viewer"
    reset = await post(operator, f"/admin/users/{olive.id}/reset-link", {}, page="/admin/users")
    assert reset.status_code == 201 and "/console/setup/" in shown_url(reset)  # no password yet: a setup link

    _, _, _ = await console.people.create_user("dev@example.com", name="Dev")
    dev = await users.get_user(db, "dev@example.com")
    team_page = f"/admin/teams/{team.id}"
    added = await post(operator, f"{team_page}/members", {"email": "dev@example.com", "role": "viewer"}, page=team_page)
    assert added.status_code == 303 and added.headers["location"] == f"/console{team_page}"
    assert (await members.get_member(db, team.id, dev.id)).role == "viewer"
    shown = await operator.get(team_page)
    assert "dev@example.com" in shown.text and "Add member" in shown.text
    again = await post(operator, f"{team_page}/members", {"email": "dev@example.com", "role": "viewer"}, page=team_page)
    assert again.status_code == 409 and "already a member" in again.text
    unknown = await post(
        operator, f"{team_page}/members", {"email": "nobody@example.com", "role": "admin"}, page=team_page
    )
    assert unknown.status_code == 404
    promoted = await post(operator, f"{team_page}/members/{dev.id}/role", {"role": "admin"}, page=team_page)
    assert promoted.status_code == 303 and (await members.get_member(db, team.id, dev.id)).role == "admin"
    removed = await post(operator, f"{team_page}/members/{dev.id}/remove", {}, page=team_page)
    assert removed.status_code == 303
    assert [m.email for m in await members.list_members(db, team.id)] == ["Olive@Example.com"]

    invited = await post(
        operator, f"{team_page}/invitations", {"email": "ivy@example.com", "role": "developer"}, page=team_page
    )
    assert invited.status_code == 201 and "/console/invite/" in shown_url(invited)
    (invitation,) = await links.list_invitations(db, team.id)
    assert invitation.email == "ivy@example.com" and invitation.role == "developer" and invitation.pending
    listed = (await operator.get(team_page)).text
    assert "ivy@example.com" in listed and "pending" in listed and _SHOWN.search(listed) is None
    revoked = await post(operator, f"/admin/invitations/{invitation.id}/revoke", {}, page=team_page)
    assert revoked.status_code == 303 and revoked.headers["location"] == f"/console{team_page}"
    assert not (await links.get_invitation(db, invitation.id)).pending
    assert "revoked" in (await operator.get(team_page)).text

    assert await actions_by(console, "ops@example.com") == [
        "invitation.create",
        "invitation.revoke",
        "member.add",
        "member.remove",
        "member.role",
        "user.create",
        "user.disable",
        "user.enable",
        "user.password",  # the operator's own setup
        "user.setup_link",  # the reset link of someone without a password yet
        "user.update",  # the name and the operator role
    ]


async def test_the_last_owner_stays_and_the_refusal_is_shown(console: Console, operator: httpx.AsyncClient) -> None:
    db = console.services.db
    team = await console.team("solo")
    await console.people.create_user("only@example.com", team="solo", role="owner")
    only = await users.get_user(db, "only@example.com")
    team_page = f"/admin/teams/{team.id}"
    for path, data in (("remove", {}), ("role", {"role": "admin"})):
        refused = await post(operator, f"{team_page}/members/{only.id}/{path}", data, page=team_page)
        assert refused.status_code == 409, path
        assert LAST_OWNER in html.unescape(refused.text) and 'id="members"' in refused.text  # on the team's page
    assert (await members.get_member(db, team.id, only.id)).role == "owner"


async def test_a_form_without_the_csrf_token_is_refused(console: Console, operator: httpx.AsyncClient) -> None:
    db = console.services.db
    team = await console.team("forged")
    await console.people.create_user("target@example.com")
    for path, data in (
        (f"/admin/teams/{team.id}/members", {"email": "target@example.com", "role": "owner"}),
        (f"/admin/teams/{team.id}/invitations", {"email": "x@example.com", "role": "owner"}),
        ("/admin/users", {"email": "forged@example.com"}),
    ):
        for token in ({}, {"csrf_token": "not-the-token"}):
            answer = await operator.post(path, data={**data, **token})
            assert answer.status_code == 403 and "did not come from this console" in answer.text, path
    assert await members.list_members(db, team.id) == []
    assert await links.list_invitations(db, team.id) == []
    assert [u.email for u in await users.list_users(db)] == ["ops@example.com", "target@example.com"]


async def test_an_operator_viewer_reads_and_every_action_is_refused(
    console: Console, viewer: httpx.AsyncClient
) -> None:
    db = console.services.db
    team = await console.team("watched")
    await console.people.create_user("owner@example.com", team="watched", role="owner")
    await console.people.create_user("spare@example.com")
    owner = await users.get_user(db, "owner@example.com")
    invitation, _ = await console.people.invite("watched", "guest@example.com", "viewer")
    team_page = f"/admin/teams/{team.id}"

    users_page = await viewer.get("/admin/users")
    assert users_page.status_code == 200 and "owner@example.com" in users_page.text
    shown = await viewer.get(team_page)
    assert shown.status_code == 200 and "owner@example.com" in shown.text and "guest@example.com" in shown.text
    for control in ('<form method="post" action="/console/admin/', "Add member", "Revoke", "Set role", "Rename"):
        assert control not in shown.text and control not in users_page.text, control

    token = csrf_of(shown.text)  # the sign-out form's: a crafted form would carry the session's own token
    for path, data in (
        ("/admin/users", {"email": "new@example.com"}),
        (f"/admin/users/{owner.id}/name", {"name": "x"}),
        (f"/admin/users/{owner.id}/status", {"status": "disabled"}),
        (f"/admin/users/{owner.id}/operator-role", {"operator_role": "operator"}),
        (f"/admin/users/{owner.id}/reset-link", {}),
        (f"{team_page}/members", {"email": "spare@example.com", "role": "admin"}),
        (f"{team_page}/members/{owner.id}/role", {"role": "viewer"}),
        (f"{team_page}/members/{owner.id}/remove", {}),
        (f"{team_page}/invitations", {"email": "other@example.com", "role": "viewer"}),
        (f"/admin/invitations/{invitation.id}/revoke", {}),
    ):
        answer = await viewer.post(path, data={**data, "csrf_token": token})
        assert answer.status_code == 403 and REFUSAL in html.unescape(answer.text), path
    assert [(m.email, m.role) for m in await members.list_members(db, team.id)] == [("owner@example.com", "owner")]
    assert [(i.email, i.pending) for i in await links.list_invitations(db, team.id)] == [("guest@example.com", True)]
    assert (await users.get_user(db, owner.id)).name is None
    assert await actions_by(console, "watcher@example.com") == ["user.password"]  # only its own setup


_FORM_TAG = re.compile(r"<form\b([^>]*)>", re.IGNORECASE)
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_OTHER_REQUESTS = re.compile(r'(?:hx-(?:post|put|patch|delete)|formmethod)="([^"]*)"', re.IGNORECASE)
SECRET_HEADER = "hush-0123456789"


def changing_forms(page: str) -> list[str]:
    """The actions of a page's forms that are not GETs, and any other control that sends one."""
    found = []
    for tag in _FORM_TAG.findall(page):
        attrs = {k.lower(): v for k, v in _ATTR.findall(tag)}
        if attrs.get("method", "get").lower() != "get":
            found.append(html.unescape(attrs.get("action", "")))
    return found + [f"<{m}>" for m in _OTHER_REQUESTS.findall(page)]


@dataclass
class Watched:
    """What a viewer looks at: a team with a member, an invitation and a key, a text and a media model."""

    team: Team
    key: str
    key_id: str
    log_id: str
    text_model: str = "fake/watched"
    media_model: str = "fake/watched-image"


async def watched(console: Console) -> Watched:
    db = console.services.db
    team = await console.team("watched")
    await console.people.create_user("owner@example.com", team="watched", role="owner")
    await console.people.invite("watched", "guest@example.com", "viewer")
    ops = Operator.for_services(console.services, Actor("operator_cli"))
    await ops.topup(team.id, "5")
    created = await ops.create_key(team.id, name="findme")
    spec = {
        "prices": {"input": "1", "output": "2"},
        "deployments": [
            {
                "kind": "openai_compatible",
                "base_url": "https://up.example/v1",
                "model": "m",
                "headers": {"X-Secret": SECRET_HEADER},
            }
        ],
    }
    found = Watched(await ops.team(team.id), created.key, created.record.id, "req_watched")
    await ops.put_model("text", found.text_model, spec)
    media = {"type": "text-to-image", "description": "", "docs_url": "", "price_usd": "0", "active": False}
    await ops.put_model("media", found.media_model, media)
    row = {"status": "error", "provider": "fake", "model_name": "watched", "endpoint": "chat", "cost_micros": 0}
    async with db.begin() as conn:
        await conn.execute(
            insert(request_logs), [{**row, "id": found.log_id, "team_id": team.id, "created_at_ms": now_ms()}]
        )
    return found


async def test_an_operator_viewer_is_offered_no_action_on_any_page(console: Console, viewer: httpx.AsyncClient) -> None:
    seen = await watched(console)
    team_page = f"/admin/teams/{seen.team.id}"
    pages = [path for path, _, _ in OPERATOR_NAV] + [
        team_page,
        f"/admin/models/edit?slug={seen.text_model}",
        f"/admin/models/edit?slug={seen.media_model}",
        f"/admin/logs/{seen.log_id}",
        "/admin/logs?status=error",
        "/admin/audit?team=watched",
    ]
    for path in pages:
        shown = await viewer.get(path)
        assert shown.status_code == 200, (path, shown.text)
        allowed = ["/console/sign-out", "/console/admin/keys"] if path == "/admin/keys" else ["/console/sign-out"]
        assert changing_forms(shown.text) == allowed, path
    # What the pages are about is there, read-only.
    assert "findme" in (await viewer.get(team_page)).text
    models = (await viewer.get("/admin/models")).text
    assert "Add a text model" not in models and f'aria-label="View {seen.text_model}"' in models
    entry = (await viewer.get(f"/admin/models/edit?slug={seen.text_model}")).text
    assert "https://up.example/v1" in entry and "X-Secret" in entry and SECRET_HEADER not in entry
    assert "<textarea" not in entry and f"Delete {seen.text_model}" not in entry
    # Adding a model is only a form: nothing there for a viewer to read.
    adding = await viewer.get("/admin/models/edit?kind=text")
    assert adding.status_code == 403 and REFUSAL in html.unescape(adding.text)


async def test_an_operator_viewer_finds_keys(console: Console, viewer: httpx.AsyncClient) -> None:
    seen = await watched(console)
    for query in (seen.key, seen.key[:10], seen.key_id):
        found = await post(viewer, "/admin/keys", {"q": query}, page="/admin/keys")
        assert found.status_code == 200, query
        assert "findme" in found.text and seen.key_id in found.text, query
        assert changing_forms(found.text) == ["/console/sign-out", "/console/admin/keys"], query  # no revoke
    assert "No key matches." in (await post(viewer, "/admin/keys", {"q": "mp-zzzzzzz"}, page="/admin/keys")).text
    # Still a form of this console: without the session's CSRF token it is refused.
    forged = await viewer.post("/admin/keys", data={"q": seen.key_id})
    assert forged.status_code == 403 and "did not come from this console" in forged.text


async def test_an_operator_viewer_changes_no_team_key_or_model(console: Console, viewer: httpx.AsyncClient) -> None:
    seen = await watched(console)
    ops = Operator.for_services(console.services, Actor("operator_cli"))
    team_page = f"/admin/teams/{seen.team.id}"
    stored_spec = (await ops.models()).text[seen.text_model].model_dump(mode="json")
    keys_before = await ops.list_keys(seen.team.id)
    token = csrf_of((await viewer.get(team_page)).text)  # the sign-out form's: the session's own token
    for path, data in (
        ("/admin/teams", {"name": "forged"}),
        (f"{team_page}/topup", {"amount_usd": "100"}),
        (f"{team_page}/tier", {"tier": console.services.settings.tiers[-1].name}),
        (f"{team_page}/flags", {"asset_service": "on", "log_retention": "on"}),
        (f"{team_page}/cache", {"cache": "team"}),
        (f"{team_page}/cache/purge", {}),
        (f"{team_page}/log-days", {"log_days": "1"}),
        (f"{team_page}/suspend", {}),
        (f"{team_page}/unsuspend", {}),
        (f"{team_page}/end-sessions", {}),
        (f"{team_page}/keys", {"name": "forged"}),
        (f"/admin/keys/{seen.key_id}/edit", {"rpm": "1"}),
        (f"/admin/keys/{seen.key_id}/revoke", {}),
        (
            "/admin/models",
            {"slug": seen.text_model, "kind": "text", "spec": '{"prices": {"input": "0", "output": "0"}}'},
        ),
        ("/admin/models", {"slug": "fake/forged", "kind": "media", "spec": "{}"}),
        ("/admin/models/delete", {"slug": seen.text_model}),
    ):
        answer = await viewer.post(path, data={**data, "csrf_token": token})
        assert answer.status_code == 403 and REFUSAL in html.unescape(answer.text), path
    assert [t.name for t in await ops.list_teams()] == ["watched"]
    assert await ops.team(seen.team.id) == seen.team  # balance, tier, flags, cache, log window, suspension
    assert await ops.list_keys(seen.team.id) == keys_before and [k.active for k in keys_before] == [True]
    snapshot = await ops.models()
    assert snapshot.text[seen.text_model].model_dump(mode="json") == stored_spec
    assert seen.media_model in snapshot.media and "fake/forged" not in snapshot.media
    assert await actions_by(console, "watcher@example.com") == ["user.password"]  # only its own setup
