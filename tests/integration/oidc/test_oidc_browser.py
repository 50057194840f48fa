"""Single sign-on in a real browser (Chromium) against a real `modelport serve` and a real OpenID provider
(issue 38): the sign-in page's button, the provider's consent page, back signed in on the console with the
team the groups claim gave. Screenshots under test-artifacts/screenshots/oidc/."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.support.accounts import admin
from tests.support.browser import chromium, screenshot
from tests.support.oidc import Provider, oidc_provider
from tests.support.server import RunningServer, run_server

pytestmark = pytest.mark.browser

ADMIN = "oidc-browser-admin-token-0123456789-abc"
SHOTS = "oidc"


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


@pytest.fixture(scope="module")
def server(provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "MODELPORT_ADMIN_TOKEN": ADMIN,
        "MODELPORT_OIDC__ISSUER": provider.issuer,
        "MODELPORT_OIDC__CLIENT_ID": "modelport-console",
        "MODELPORT_OIDC__CLIENT_SECRET_ENV": "IDP_CLIENT_SECRET",
        "IDP_CLIENT_SECRET": secrets.token_urlsafe(24),
        "MODELPORT_OIDC__DISPLAY_NAME": "Acme SSO",
        "MODELPORT_OIDC__ALLOWED_EMAIL_DOMAINS": "acme.test",
        "MODELPORT_OIDC__AUTO_CREATE_USERS": "true",
        "MODELPORT_OIDC__ROLE_MAPPINGS": '{"ai-team": [{"team": "browser-acme", "role": "developer"}]}',
        "AUTHLIB_INSECURE_TRANSPORT": "1",
    }
    with run_server(tmp_path_factory.mktemp("oidc-browser"), env=env) as running:
        assert admin(running, ADMIN, "POST", "/teams", json={"name": "browser-acme"}).status_code == 200
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_a_full_sign_in_through_the_provider(server: RunningServer, provider: Provider, browser: Browser) -> None:
    provider.set_user("sub-chrome", {"email": "chrome@acme.test", "email_verified": True, "groups": ["ai-team"]})
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(server.media_url + "/console/sign-in")
        button = page.locator("#sso-sign-in")
        expect(button).to_have_text("Sign in with Acme SSO")
        screenshot(page, SHOTS, "sign-in-page")
        button.click()
        page.wait_for_url(provider.issuer + "/oauth2/authorize*")  # the provider's consent page
        page.fill("input[name=sub]", "sub-chrome")
        page.click("button[type=submit]:has-text('Authorize')")
        page.wait_for_url(server.media_url + "/console/**")
        expect(page.locator("body")).to_contain_text("browser-acme")  # the team the groups claim gave
        screenshot(page, SHOTS, "signed-in")
        page.goto(server.media_url + "/console/profile")
        expect(page.locator("#me-h")).to_have_text("chrome@acme.test")
        expect(page.locator("#sso-linked")).to_be_visible()
    finally:
        context.close()
