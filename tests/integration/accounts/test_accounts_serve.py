"""Console accounts through a real `modelport serve`, on SQLite and on PostgreSQL (issue 37): setup links,
sign-in with a password and a second factor, invitations, roles and the last-owner rule, leaving (sessions
and personal keys end at once), the CLI and the audit events of people. One server per backend."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyotp
import pytest
from sqlalchemy import select

from modelport.accounts.tables import users
from modelport.storage.db import create_engine
from tests.support.accounts import (
    PASSWORD,
    admin,
    browser,
    close_browsers,
    console_path,
    server_on,
    set_password,
    sign_in,
)
from tests.support.console import ConsoleClient, csrf_of
from tests.support.databases import BACKENDS
from tests.support.server import RunningServer

TOKEN = "accounts-admin-token-0123456789-abcdef"
GONE = "This link is no longer valid"


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp: Path = tmp_path_factory.mktemp(f"accounts-{request.param}")
    with server_on(
        request.param,
        tmp,
        MODELPORT_ADMIN_TOKEN=TOKEN,
        MODELPORT_ACCOUNTS__SIGN_IN_FAILURES="1000",
        MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE="1000",
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def _close_browsers() -> Iterator[None]:
    yield
    close_browsers()


def api(server: RunningServer, method: str, path: str, **kwargs: object) -> httpx.Response:
    return admin(server, TOKEN, method, path, **kwargs)


def make_team(server: RunningServer, name: str) -> str:
    made = api(server, "POST", "/teams", json={"name": name})
    assert made.status_code == 200, made.text
    return str(made.json()["data"]["id"])


def person(server: RunningServer, email: str, team: str | None = None, role: str | None = None) -> tuple[str, str]:
    """A user made by the operator, with their setup link: (user id, setup url)."""
    body: dict[str, object] = {"email": email, "name": email.split("@")[0]}
    if team is not None:
        body.update(team=team, role=role)
    made = api(server, "POST", "/users", json=body)
    assert made.status_code == 200, made.text
    data = made.json()["data"]
    return str(data["id"]), str(data["setup_url"])


def member_of(server: RunningServer, email: str, team: str, role: str) -> tuple[str, ConsoleClient]:
    user_id, setup = person(server, email, team, role)
    return user_id, set_password(server, setup)


def stored_totp_secret(server: RunningServer, email: str) -> str:
    url = (
        server.env.get("MODELPORT_DATABASE_URL")
        or f"sqlite+aiosqlite:///{server.env['MODELPORT_DATA_DIR']}/modelport.db"
    )

    async def read() -> str:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                return str(await conn.scalar(select(users.c.totp_secret).where(users.c.email_key == email)))
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_a_setup_link_sets_the_password_once_and_signs_in(server: RunningServer) -> None:
    make_team(server, "setup-team")
    user_id, setup = person(server, "Setup.Person@Example.com", "setup-team", "owner")
    assert setup.startswith(server.media_url + "/console/setup/")
    client = browser(server)
    page = client.get(console_path(setup))
    weak = client.http.post(
        console_path(setup),
        data={"password": "password1234", "password_again": "password1234", "csrf_token": csrf_of(page.text)},
    )
    assert weak.status_code == 400 and "too common" in weak.text  # the link still works after a refusal
    signed = set_password(server, setup)
    home = signed.get("/")
    assert home.status_code == 200 and "setup-team" in home.text and "setup.person@example.com" in home.text.lower()
    again = client.get(console_path(setup))
    assert again.status_code == 410 and GONE in again.text
    # The email is unique whatever its case.
    taken = api(server, "POST", "/users", json={"email": "setup.person@EXAMPLE.com"})
    assert taken.status_code == 409 and taken.json()["message"] == "Conflict: a user with that email already exists"
    shown = api(server, "GET", f"/users/{user_id}").json()["data"]
    assert shown["teams"] == [{"team_id": shown["teams"][0]["team_id"], "role": "owner"}]
    assert shown["last_sign_in_at"] is None and shown["status"] == "active"  # setup is not a sign-in
    assert api(server, "GET", "/users/setup.person@example.com").json()["data"]["id"] == user_id


def test_sign_in_refusals_say_nothing_about_the_email(server: RunningServer) -> None:
    make_team(server, "refusals")
    user_id, _ = member_of(server, "refusal@example.com", "refusals", "developer")
    answers = []
    for email, password in (
        ("refusal@example.com", "not the password at all"),
        ("nobody-has-this@example.com", PASSWORD),
        ("REFUSAL@example.com", PASSWORD + " "),
    ):
        client = browser(server)
        answer = client.post_form("/sign-in", {"email": email, "password": password})
        answers.append((answer.status_code, re.findall(r'role="alert">([^<]*)<', answer.text)))
    assert answers == [(401, ["That email and password were not accepted."])] * 3
    # A disabled account with the right password: the same answer.
    assert api(server, "PATCH", f"/users/{user_id}", json={"status": "disabled"}).status_code == 200
    client = browser(server)
    answer = client.post_form("/sign-in", {"email": "refusal@example.com", "password": PASSWORD})
    assert answer.status_code == 401 and "That email and password were not accepted." in answer.text
    assert api(server, "PATCH", f"/users/{user_id}", json={"status": "active"}).status_code == 200
    # The right one, any case of the email: in, with a new session id and the cookie's flags.
    before = client.http.cookies.get("modelport_console")
    answer = client.post_form("/sign-in", {"email": "Refusal@Example.com", "password": PASSWORD})
    assert answer.status_code == 303
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/console" in cookie
    assert client.http.cookies.get("modelport_console") != before
    assert client.get("/").status_code == 200
    events = api(server, "GET", "/audit", params={"actor_kind": "user", "action": "user.sign_in_failed"}).json()
    assert any(e["target"] == "refusal@example.com" for e in events["data"]["events"])


def test_the_second_factor_and_single_use_recovery_codes(server: RunningServer) -> None:
    make_team(server, "two-factor")
    _, client = member_of(server, "tf@example.com", "two-factor", "viewer")
    started = client.post_form("/profile/second-factor/start", {}, csrf_from="/profile")
    secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', started.text)
    assert started.status_code == 200 and secret is not None
    wrong = client.post_form("/profile/second-factor/confirm", {"code": "000000"}, csrf_from="/profile")
    assert wrong.status_code == 400
    confirmed = client.post_form(
        "/profile/second-factor/confirm", {"code": pyotp.TOTP(secret.group(1)).now()}, csrf_from="/profile"
    )
    codes = re.search(r'id="recovery-codes">([^<]+)<', confirmed.text)
    assert confirmed.status_code == 200 and codes is not None
    stored = stored_totp_secret(server, "tf@example.com")  # sealed at rest, never the base32 text
    assert stored.startswith("mpts1.") and secret.group(1) not in stored
    recovery = codes.group(1).split()
    assert len(recovery) == 10
    # Password, then the code: a wrong code is refused, a TOTP code or a recovery code (once) lets in.
    fresh = browser(server)
    first = fresh.post_form("/sign-in", {"email": "tf@example.com", "password": PASSWORD})
    assert first.status_code == 303 and first.headers["location"].endswith("/sign-in/code")
    assert fresh.post_form("/sign-in/code", {"code": "123456"}).status_code == 401
    assert fresh.post_form("/sign-in/code", {"code": recovery[0]}).status_code == 303
    assert fresh.get("/").status_code == 200
    again = browser(server)
    again.post_form("/sign-in", {"email": "tf@example.com", "password": PASSWORD})
    assert again.post_form("/sign-in/code", {"code": recovery[0]}).status_code == 401  # used up
    assert again.get("/").status_code == 303  # the password alone is not a session
    code = pyotp.TOTP(secret.group(1)).now()
    for expected in (303, 401):  # a TOTP code works once, even within its 30-second window
        replay = browser(server)
        replay.post_form("/sign-in", {"email": "tf@example.com", "password": PASSWORD})
        assert replay.post_form("/sign-in/code", {"code": code}).status_code == expected


def test_an_invitation_creates_the_account_once_and_expires_with_its_revocation(server: RunningServer) -> None:
    make_team(server, "inviting")
    _, owner = member_of(server, "inv-owner@example.com", "inviting", "owner")
    invited = owner.post_form(
        "/members/invite", {"email": "new.person@example.com", "role": "developer"}, csrf_from="/members"
    )
    assert invited.status_code == 201
    url = html.unescape(re.search(r'id="invited-url">([^<]+)<', invited.text).group(1))  # type: ignore[union-attr]
    assert url.startswith(server.media_url + "/console/invite/")
    assert url not in owner.get("/members").text  # shown once
    joined = set_password(server, url, name="New Person")
    assert "inviting" in joined.get("/").text
    members = api(server, "GET", "/teams/inviting/members").json()["data"]["members"]
    assert {(m["email"], m["role"]) for m in members} == {
        ("inv-owner@example.com", "owner"),
        ("new.person@example.com", "developer"),
    }
    assert browser(server).get(console_path(url)).status_code == 410  # single use
    # An existing person is asked to sign in, then accepts.
    make_team(server, "second-team")
    made = api(
        server, "POST", "/teams/second-team/invitations", json={"email": "NEW.person@example.com", "role": "viewer"}
    )
    assert made.status_code == 200 and set(made.json()["data"]) >= {"id", "url", "expires_at", "accepted_at"}
    second = made.json()["data"]["url"]
    anonymous = browser(server).get(console_path(second))
    assert anonymous.status_code == 200 and "Sign in to accept" in anonymous.text
    accepted = joined.post_form(console_path(second), {}, csrf_from=console_path(second))
    assert accepted.status_code == 303
    listed = api(server, "GET", "/teams/second-team/invitations").json()["data"]["invitations"]
    assert listed[0]["accepted_at"] is not None and "url" not in listed[0]
    # The team switcher: the person is in two teams now.
    page = joined.get("/")
    assert 'id="team-switcher"' in page.text and "second-team" in page.text
    # A revoked invitation is gone.
    revoked = api(server, "POST", "/teams/inviting/invitations", json={"email": "r@example.com", "role": "viewer"})
    invitation = revoked.json()["data"]
    assert api(server, "DELETE", f"/invitations/{invitation['id']}").status_code == 200
    gone = browser(server).get(console_path(invitation["url"]))
    assert gone.status_code == 410 and GONE in gone.text


def test_roles_the_last_owner_and_admin_keys_on_the_team_api(server: RunningServer) -> None:
    team_id = make_team(server, "roles")
    owner_id, _ = member_of(server, "roles-owner@example.com", "roles", "owner")
    dev_id, _ = member_of(server, "roles-dev@example.com", "roles", "developer")
    last = api(server, "PATCH", f"/teams/roles/members/{owner_id}", json={"role": "admin"})
    assert last.status_code == 409 and last.json()["message"] == "Conflict: a team keeps at least one owner"
    assert api(server, "DELETE", f"/teams/roles/members/{owner_id}").status_code == 409
    key = api(server, "POST", "/teams/roles/keys", json={"role": "admin"}).json()["data"]["key"]
    member_key = api(server, "POST", "/teams/roles/keys", json={}).json()["data"]["key"]
    team_api = httpx.Client(base_url=server.media_url + "/api/v1/team", headers={"Authorization": f"Bearer {key}"})
    request_closes = team_api.close
    listed = team_api.get("/members").json()["data"]["members"]
    assert {m["user_id"] for m in listed} == {owner_id, dev_id} and set(listed[0]) == {
        "user_id",
        "email",
        "name",
        "role",
        "joined_at",
    }
    refusal = {"code": 403, "message": "Forbidden: your role in this team does not allow this"}
    assert team_api.patch(f"/members/{dev_id}", json={"role": "owner"}).json() == refusal  # admins stop at admin
    assert team_api.delete(f"/members/{owner_id}").json() == refusal
    assert team_api.patch(f"/members/{dev_id}", json={"role": "admin"}).json()["data"]["role"] == "admin"
    made = team_api.post("/invitations", json={"email": "via-key@example.com", "role": "viewer"}).json()["data"]
    assert made["url"].startswith(server.media_url + "/console/invite/") and made["created_by"] is None
    assert team_api.delete(f"/invitations/{made['id']}").status_code == 200
    assert team_api.post("/invitations", json={"email": "x@example.com", "role": "owner"}).json() == refusal
    member_answer = httpx.get(
        server.media_url + "/api/v1/team/members", headers={"Authorization": f"Bearer {member_key}"}
    )
    assert member_answer.status_code == 403 and member_answer.json() == refusal
    assert team_id
    request_closes()


def test_leaving_ends_sessions_and_personal_keys_in_one_step(server: RunningServer) -> None:
    make_team(server, "leaving")
    member_of(server, "stays@example.com", "leaving", "owner")
    user_id, client = member_of(server, "leaves@example.com", "leaving", "developer")
    made = client.post_form("/keys", {"name": "mine", "period": "month"}, csrf_from="/keys")
    assert made.status_code == 201, made.text
    key = re.search(r"(mp-[A-Za-z0-9_-]{20,})", made.text).group(1)  # type: ignore[union-attr]
    team_key = api(server, "POST", "/teams/leaving/keys", json={"name": "team"}).json()["data"]["key"]
    keys = api(server, "GET", "/teams/leaving/keys").json()["data"]["keys"]
    mine = next(k for k in keys if k["name"] == "mine")
    assert mine["owner_user_id"] == user_id and mine["created_by"] == user_id and mine["role"] == "member"
    balance = server.media_url + "/api/v1/team/balance"
    assert httpx.get(balance, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    removed = api(server, "DELETE", f"/teams/leaving/members/{user_id}")
    assert removed.status_code == 200
    assert client.get("/").status_code == 303  # the session ended with the membership
    assert httpx.get(balance, headers={"Authorization": f"Bearer {key}"}).status_code == 401
    keys = api(server, "GET", "/teams/leaving/keys").json()["data"]["keys"]
    assert not next(k for k in keys if k["name"] == "mine")["active"]
    assert next(k for k in keys if k["name"] == "team")["active"]  # a team key stays
    assert team_key
    events = api(server, "GET", "/audit", params={"action": "member.remove"}).json()["data"]["events"]
    assert any(e["target"] == user_id and e["after"] == {"personal_keys_revoked": 1} for e in events)


def test_the_cli_creates_people_and_invitations(server: RunningServer) -> None:
    make_team(server, "cli-team")
    created = server.cli(
        "admin", "user", "create", "cli@example.com", "--team", "cli-team", "--role", "admin", "--json"
    )
    assert created.returncode == 0, created.stderr
    # The CLI knows the public URL from the settings (MODELPORT_PUBLIC_MEDIA_URL), not the test's port.
    assert re.search(r'"setup_url":"http://[^"]+/console/setup/[A-Za-z0-9_-]{40,}"', created.stdout)
    listed = server.cli("admin", "user", "list")
    assert "cli@example.com" in listed.stdout and "cli-team" not in listed.stderr
    invited = server.cli("admin", "invite", "cli-team", "friend@example.com", "--role", "viewer")
    assert invited.returncode == 0 and "/console/invite/" in invited.stdout
    setrole = server.cli("admin", "member", "set-role", "cli-team", "cli@example.com", "--role", "owner", "--json")
    assert setrole.returncode == 0 and '"role":"owner"' in setrole.stdout.replace(" ", "")
    last = server.cli("admin", "member", "remove", "cli-team", "cli@example.com")
    assert last.returncode != 0 and "a team keeps at least one owner" in last.stderr
    disabled = server.cli("admin", "user", "disable", "CLI@example.com")
    assert disabled.returncode == 0 and "disabled" in disabled.stdout
    reset = server.cli("admin", "user", "reset-link", "cli@example.com", "--json")
    assert reset.returncode == 0 and "/console/setup/" in reset.stdout  # no password yet: a setup link


def test_the_first_operator_sets_up_from_the_banner_link(server: RunningServer) -> None:
    line = next(line for line in server.banner if line.startswith("first operator:"))
    url = re.search(r"(http://\S+/console/setup/\S+)", line).group(1)  # type: ignore[union-attr]
    client = set_password(server, url, email="ops@example.com", name="Ops")
    assert client.get("/admin/users").status_code == 200
    made = client.post_form(
        "/admin/users", {"email": "ops-made@example.com", "operator_role": "operator_viewer"}, csrf_from="/admin/users"
    )
    assert made.status_code == 201 and "/console/setup/" in made.text
    events = api(server, "GET", "/audit", params={"actor_kind": "user", "action": "user.create"}).json()["data"]
    assert any(e["actor"]["email"] == "ops@example.com" for e in events["events"])
    viewer_link = re.search(r'id="shown-url">([^<]+)<', made.text).group(1)  # type: ignore[union-attr]
    viewer = set_password(server, html.unescape(viewer_link))
    assert viewer.get("/admin/users").status_code == 200
    refused = viewer.post_form("/admin/users", {"email": "nope@example.com"}, csrf_from="/admin/users")
    assert refused.status_code == 403 and "your operator role does not allow this" in refused.text


def test_a_reset_link_and_sign_out_everywhere_end_the_other_sessions(server: RunningServer) -> None:
    make_team(server, "resets")
    user_id, first = member_of(server, "reset-me@example.com", "resets", "admin")
    second = sign_in(server, "reset-me@example.com")
    made = api(server, "POST", f"/users/{user_id}/reset-link")
    assert made.status_code == 200 and set(made.json()["data"]) == {"url", "expires_at"}
    url = made.json()["data"]["url"]
    assert "/console/reset/" in url
    third = set_password(server, url, password="another long passphrase 7")
    assert first.get("/").status_code == 303 and second.get("/").status_code == 303  # ended by the reset
    assert third.get("/").status_code == 200
    assert (
        browser(server).post_form("/sign-in", {"email": "reset-me@example.com", "password": PASSWORD}).status_code
        == 401
    )
    fourth = sign_in(server, "reset-me@example.com", "another long passphrase 7")
    ended = third.post_form("/profile/sign-out-everywhere", {}, csrf_from="/profile")
    assert ended.status_code == 303
    assert third.get("/").status_code == 303 and fourth.get("/").status_code == 303


def test_disabling_a_user_ends_their_sessions_and_personal_keys(server: RunningServer) -> None:
    make_team(server, "disabling")
    member_of(server, "keeper@example.com", "disabling", "owner")
    user_id, client = member_of(server, "off@example.com", "disabling", "developer")
    made = client.post_form("/keys", {"name": "mine", "period": "month"}, csrf_from="/keys")
    key = re.search(r"(mp-[A-Za-z0-9_-]{20,})", made.text).group(1)  # type: ignore[union-attr]
    balance = server.media_url + "/api/v1/team/balance"
    assert httpx.get(balance, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert api(server, "PATCH", f"/users/{user_id}", json={"status": "disabled"}).json()["data"]["status"] == "disabled"
    assert client.get("/").status_code == 303
    assert httpx.get(balance, headers={"Authorization": f"Bearer {key}"}).status_code == 401
    events = api(server, "GET", "/audit", params={"action": "user.disable"}).json()["data"]["events"]
    assert any(e["target"] == user_id and e["actor"]["kind"] == "operator_token" for e in events)


def test_enabling_a_user_brings_back_only_the_keys_their_disabling_stopped(server: RunningServer) -> None:
    first, second = make_team(server, "re-enable"), make_team(server, "re-enable-left")
    member_of(server, "re-keeper@example.com", "re-enable", "owner")
    member_of(server, "re-keeper2@example.com", "re-enable-left", "owner")
    user_id, client = member_of(server, "back@example.com", "re-enable", "developer")
    joined = api(server, "POST", "/teams/re-enable-left/members", json={"email": "back@example.com", "role": "admin"})
    assert joined.status_code == 200, joined.text
    balance = server.media_url + "/api/v1/team/balance"

    def key(team: str, name: str) -> tuple[str, str]:
        made = api(server, "POST", f"/teams/{team}/keys", json={"name": name, "owner_user_id": user_id})
        assert made.status_code == 200 and made.json()["data"]["owner_user_id"] == user_id, made.text
        return str(made.json()["data"]["id"]), str(made.json()["data"]["key"])

    def works(secret: str) -> bool:
        status = httpx.get(balance, headers={"Authorization": f"Bearer {secret}"}, timeout=30).status_code
        assert status in (200, 401), status
        return status == 200

    back, by_hand_before, by_hand_while, left = (
        key("re-enable", "back"),
        key("re-enable", "before"),
        key("re-enable", "while"),
        key("re-enable-left", "left"),
    )
    team_key = api(server, "POST", "/teams/re-enable/keys", json={"name": "team"}).json()["data"]["key"]
    assert api(server, "POST", f"/keys/{by_hand_before[0]}/revoke").status_code == 200
    assert [works(k) for _, k in (back, by_hand_before, by_hand_while, left)] == [True, False, True, True]

    assert api(server, "PATCH", f"/users/{user_id}", json={"status": "disabled"}).status_code == 200
    assert not any(works(k) for _, k in (back, by_hand_before, by_hand_while, left))
    # While disabled: one key is revoked by hand, and the person leaves the second team.
    assert api(server, "POST", f"/keys/{by_hand_while[0]}/revoke").status_code == 200
    assert api(server, "DELETE", f"/teams/re-enable-left/members/{user_id}").status_code == 200

    enabled = api(server, "PATCH", f"/users/{user_id}", json={"status": "active"})
    assert enabled.status_code == 200 and enabled.json()["data"]["status"] == "active"
    assert [works(k) for _, k in (back, by_hand_before, by_hand_while, left)] == [True, False, False, False]
    assert works(team_key)
    listed = {k["name"]: k["active"] for k in api(server, "GET", "/teams/re-enable/keys").json()["data"]["keys"]}
    assert listed == {"back": True, "before": False, "while": False, "team": True}
    assert client.get("/").status_code == 303  # console sessions stay ended: the person signs in again
    events = api(server, "GET", "/audit", params={"action": "user.enable"}).json()["data"]["events"]
    assert any(e["target"] == user_id and e["after"]["personal_keys_restored"] == 1 for e in events)
    revoked = api(server, "GET", "/audit", params={"action": "key.revoke"}).json()["data"]["events"]
    assert any(e["target"] == by_hand_while[0] and e["after"] == {"stopped_reason": "revoked"} for e in revoked)

    # Disabling again and enabling again: the same one key, not the ones revoked by hand meanwhile.
    api(server, "PATCH", f"/users/{user_id}", json={"status": "disabled"})
    assert not works(back[1])
    api(server, "PATCH", f"/users/{user_id}", json={"status": "active"})
    assert works(back[1]) and not works(by_hand_while[1])
    # Re-adding them to the team they left does not bring that team's key back (the role may be lower now).
    again = {"email": "back@example.com", "role": "viewer"}
    rejoined = api(server, "POST", "/teams/re-enable-left/members", json=again)
    assert rejoined.status_code == 200 and not works(left[1])
    assert first and second
