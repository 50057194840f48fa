"""Console accounts in a real browser (Chromium) against a real `modelport serve` (issue 37): an owner
invites someone from the members page, the invitation is accepted in a second browser context, the new
member turns on the second factor; a viewer sees no write buttons and gets 403 when posting anyway.
Screenshots under test-artifacts/screenshots/accounts/."""

from __future__ import annotations

from collections.abc import Iterator

import pyotp
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.accounts import PASSWORD, admin
from tests.support.browser import chromium, screenshot
from tests.support.server import RunningServer, run_server

pytestmark = pytest.mark.browser

TOKEN = "accounts-browser-admin-token-0123456789"
SHOTS = "accounts"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {"MODELPORT_ADMIN_TOKEN": TOKEN, "MODELPORT_ACCOUNTS__SIGN_IN_FAILURES": "1000"}
    with run_server(tmp_path_factory.mktemp("accounts-browser"), env=env) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def set_up(page: Page, url: str, name: str) -> None:
    page.goto(url)
    page.fill("#name", name)
    page.fill("#password", PASSWORD)
    page.fill("#password_again", PASSWORD)
    page.click("button[type=submit]")


def people(server: RunningServer, team: str, email: str, role: str) -> str:
    made = admin(server, TOKEN, "POST", "/users", json={"email": email, "team": team, "role": role})
    assert made.status_code == 200, made.text
    return str(made.json()["data"]["setup_url"])


def test_an_invitation_accepted_in_a_second_browser_context(server: RunningServer, browser: Browser) -> None:
    assert admin(server, TOKEN, "POST", "/teams", json={"name": "browser-team"}).status_code == 200
    owner_ctx, invited_ctx = browser.new_context(), browser.new_context()
    try:
        owner = owner_ctx.new_page()
        set_up(owner, people(server, "browser-team", "owner@browser.example", "owner"), "Olive Owner")
        owner.goto(server.media_url + "/console/members")
        owner.fill("#invite-email", "ivy@browser.example")
        owner.select_option("#invite-role", "admin")
        owner.click("#invite-form button[type=submit]")
        link = owner.locator("#invited-url")
        expect(link).to_contain_text("/console/invite/")
        screenshot(owner, SHOTS, "01-members-invitation-link")
        url = link.inner_text().strip()

        invited = invited_ctx.new_page()
        invited.goto(url)
        expect(invited.locator("body")).to_contain_text("is invited to the team browser-team as admin")
        screenshot(invited, SHOTS, "02-invitation-page")
        set_up(invited, url, "Ivy Invited")
        expect(invited.locator("#team-switcher")).to_be_visible()
        screenshot(invited, SHOTS, "03-invited-overview")

        owner.goto(server.media_url + "/console/members")
        expect(owner.locator("tbody")).to_contain_text("ivy@browser.example")
        screenshot(owner, SHOTS, "04-members-after-accept")
        invited.goto(url)  # the link worked once
        expect(invited.locator("body")).to_contain_text("This link is no longer valid")
        screenshot(invited, SHOTS, "05-used-link")

        invited.goto(server.media_url + "/console/profile")
        invited.click("text=Set up a second factor")
        secret = invited.locator("#totp-secret").inner_text().strip()
        invited.fill("#code", pyotp.TOTP(secret).now())
        invited.click("text=Turn the second factor on")
        expect(invited.locator("#recovery-codes")).to_be_visible()
        screenshot(invited, SHOTS, "06-profile-second-factor-on")
    finally:
        owner_ctx.close()
        invited_ctx.close()


def test_a_viewer_sees_no_write_buttons_and_is_refused_posting_anyway(server: RunningServer, browser: Browser) -> None:
    assert admin(server, TOKEN, "POST", "/teams", json={"name": "viewers"}).status_code == 200
    people(server, "viewers", "boss@browser.example", "owner")
    context = browser.new_context()
    try:
        page = context.new_page()
        set_up(page, people(server, "viewers", "val@browser.example", "viewer"), "Val Viewer")
        page.goto(server.media_url + "/console/members")
        expect(page.locator("tbody")).to_contain_text("boss@browser.example")
        assert page.locator("#invite-form").count() == 0
        assert page.locator("text=Remove").count() == 0 and page.locator("text=Set role").count() == 0
        nav = page.locator("nav[aria-label='Team console']").inner_text()
        assert "API keys" not in nav and "Audit log" not in nav and "Notifications" not in nav
        screenshot(page, SHOTS, "07-viewer-members")
        # Posting anyway, with the session's own CSRF token, as a crafted form would.
        csrf = page.locator("input[name=csrf_token]").first.get_attribute("value")
        assert csrf
        answer = page.request.post(
            server.media_url + "/console/members/invite",
            form={"email": "x@browser.example", "role": "viewer", "csrf_token": csrf},
        )
        assert answer.status == 403 and "your role in this team does not allow this" in answer.text()
        page.set_content(answer.text())
        screenshot(page, SHOTS, "08-viewer-refused")
    finally:
        context.close()
    listed = admin(server, TOKEN, "GET", "/teams/viewers/invitations").json()["data"]["invitations"]
    assert listed == []  # nothing was created


def test_an_operator_account_creates_a_user_adds_them_invites_and_revokes(
    server: RunningServer, browser: Browser
) -> None:
    made = admin(server, TOKEN, "POST", "/users", json={"email": "opal@browser.example", "operator_role": "operator"})
    assert made.status_code == 200, made.text
    context = browser.new_context()
    try:
        page = context.new_page()
        set_up(page, str(made.json()["data"]["setup_url"]), "Opal Operator")
        page.goto(server.media_url + "/console/admin/users")
        page.fill("#email", "una@browser.example")
        page.fill("#name", "Una User")
        page.click("#create-user button[type=submit]")
        expect(page.locator("#shown-url")).to_contain_text("/console/setup/")
        screenshot(page, SHOTS, "09-operator-user-created")

        page.goto(server.media_url + "/console/admin/")
        page.fill("input[name=name]", "op-browser")
        page.click("form[action$='/admin/teams'] button[type=submit]")
        expect(page.locator("h1")).to_contain_text("Team op-browser")
        page.fill("#member-email", "una@browser.example")
        page.select_option("#member-role", "owner")
        page.click("#add-member button[type=submit]")
        expect(page.locator("#members tbody")).to_contain_text("una@browser.example")
        expect(page.locator("#members tbody")).to_contain_text("owner")

        page.fill("#invite-email", "iris@browser.example")
        page.select_option("#invite-role", "viewer")
        page.click("#invite-form button[type=submit]")
        expect(page.locator("#invited-url")).to_contain_text("/console/invite/")
        expect(page.locator("#invitations tbody")).to_contain_text("pending")
        page.click("button[aria-label='Revoke the invitation of iris@browser.example']")
        expect(page.locator("#invitations tbody")).to_contain_text("revoked")
        assert page.locator("#invited-url").count() == 0  # the link was shown once
        page.locator("#members-h").scroll_into_view_if_needed()
        screenshot(page, SHOTS, "10-operator-team-members-and-invitations")
    finally:
        context.close()
    listed = admin(server, TOKEN, "GET", "/teams/op-browser/invitations").json()["data"]["invitations"]
    assert [(i["email"], i["accepted_at"]) for i in listed] == [("iris@browser.example", None)]
    events = admin(server, TOKEN, "GET", "/audit", params={"action": "invitation.revoke"}).json()["data"]["events"]
    assert [e["actor"]["email"] for e in events] == ["opal@browser.example"]
