"""The operator console, the front door and /docs in a real browser (Chromium) against a real `modelport serve`.

Each step saves a screenshot under test-artifacts/screenshots/admin/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import chromium, screenshot
from tests.support.server import RunningServer, run_server

pytestmark = pytest.mark.browser

ADMIN_TOKEN = "browser-admin-token-0123456789-abcdef"
SECRET_HEADER = "s3cret-header-value"
SECRET_PASSWORD = "pw-in-the-url"
BROKEN = "broken/upstream"


def _admin(server: RunningServer, method: str, path: str, **kwargs: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    return httpx.request(method, server.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    # The broken deployment must stay cooling down for the whole module (30 s ran out on a slow CI machine).
    env = {
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        "MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE": "1000",
        "MODELPORT_UPSTREAM_COOLDOWN_SECONDS": "600",
    }
    with run_server(tmp_path_factory.mktemp("operator-browser"), env=env) as running:
        # A deployment nobody listens on, with credentials in a header and in its URL: they must never show.
        spec = {
            "prices": {"input": "0", "output": "0"},
            "deployments": [
                {
                    "name": "dead",
                    "kind": "openai_chat",
                    "base_url": f"http://user:{SECRET_PASSWORD}@127.0.0.1:9/v1",
                    "model": "m",
                    "headers": {"X-Upstream-Secret": SECRET_HEADER},
                }
            ],
        }
        assert _admin(running, "PUT", f"/models/{BROKEN}", json={"kind": "text", "spec": spec}).status_code == 200
        for _ in range(4):  # three failures cool the deployment down; the fourth is refused at once
            httpx.post(
                running.text_url + "/v1/chat/completions",
                headers={"Authorization": f"Bearer {running.demo_key}"},
                json={"model": BROKEN, "messages": [{"role": "user", "content": "hi"}]},
                timeout=60,
            )
        task = httpx.post(
            running.media_url + "/local/sketch-image",
            headers={"Authorization": f"Bearer {running.demo_key}"},
            json={"prompt": "a lighthouse at dusk"},
            timeout=60,
        )
        assert task.status_code == 200, task.text
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser, server: RunningServer) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    origin = urlsplit(server.media_url).netloc
    foreign: list[str] = []
    errors: list[str] = []
    opened.on("request", lambda r: None if urlsplit(r.url).netloc == origin else foreign.append(r.url))
    opened.on("pageerror", lambda exc: errors.append(str(exc)))  # a script that broke
    opened.on("dialog", lambda dialog: dialog.accept())  # the console asks before revoking or suspending
    yield opened
    context.close()
    assert foreign == [], f"pages asked another origin: {foreign}"
    assert errors == [], f"scripts failed: {errors}"


def _sign_in(page: Page, server: RunningServer) -> None:
    page.goto(server.media_url + "/console/admin/sign-in")
    page.get_by_label("Admin token", exact=True).fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Teams", level=1)).to_be_visible()


def test_front_door_and_api_reference(page: Page, server: RunningServer) -> None:
    page.goto(server.media_url + "/")
    assert urlsplit(page.url).path.startswith("/console/")  # the browser was sent to the console
    screenshot(page, "admin", "01-front-door")

    page.goto(server.media_url + "/docs")
    expect(page.get_by_role("heading", name="API reference")).to_be_visible()
    screenshot(page, "admin", "02-docs-index")
    page.get_by_role("link", name="Media host API").click()
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/team/balance").first).to_be_visible()
    screenshot(page, "admin", "03-docs-media-api")
    page.get_by_role("navigation", name="Reference").get_by_role("link", name="Text API").click()
    expect(page.locator(".opblock-summary-path", has_text="/v1/chat/completions").first).to_be_visible()
    expect(page.locator(".servers select")).to_contain_text(server.text_url)
    screenshot(page, "admin", "04-docs-text-api")
    page.goto(server.media_url + "/docs/guides/")
    page.get_by_role("link", name="Admin API").first.click()
    expect(page.get_by_role("heading", name="Admin API", level=1)).to_be_visible()
    expect(page.locator("main table").first).to_be_visible()
    screenshot(page, "admin", "05-docs-guide-admin")


def test_operator_signs_in_creates_a_team_tops_it_up_and_sees_the_tier_change(
    page: Page, server: RunningServer
) -> None:
    page.goto(server.media_url + "/console/admin/sign-in")
    page.get_by_label("Admin token", exact=True).fill("not-the-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not accepted")
    screenshot(page, "admin", "06-sign-in-refused")
    page.get_by_label("Admin token", exact=True).fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Teams", level=1)).to_be_visible()
    expect(page.get_by_role("cell", name=re.compile("^demo"))).to_be_visible()
    screenshot(page, "admin", "07-teams")

    page.get_by_label("Name").fill("acme")
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_role("heading", name="Team acme")).to_be_visible()
    expect(page.get_by_role("status").first).to_contain_text("Created team acme")
    expect(page.locator("#tier")).to_have_text("free")

    page.get_by_label("Amount (USD)").fill("25")
    page.get_by_label("Note (in the ledger)").fill("invoice 1042")
    page.get_by_role("button", name="Add funds").click()
    expect(page.get_by_role("status").first).to_contain_text("tier is now tier1")
    expect(page.locator("#tier")).to_have_text("tier1")
    expect(page.locator("#balance")).to_have_text("$25.00")
    expect(page.get_by_role("cell", name="invoice 1042")).to_be_visible()
    screenshot(page, "admin", "08-team-after-topup")
    # The same service behind the admin API saw it.
    team = _admin(server, "GET", "/teams/acme").json()["data"]
    assert team["tier"] == "tier1" and team["balance_usd"] == 25

    page.get_by_label("Amount (USD)").fill("-3")
    page.get_by_label("Amount (USD)").evaluate("el => el.removeAttribute('pattern')")
    page.get_by_role("button", name="Add funds").click()
    expect(page.get_by_role("alert")).to_contain_text("Top-up refused")
    expect(page.locator("#balance")).to_have_text("$25.00")


def test_operator_creates_and_revokes_a_key_and_suspends_a_team(page: Page, server: RunningServer) -> None:
    _admin(server, "POST", "/teams", json={"name": "keyed"})
    _sign_in(page, server)
    page.get_by_role("link", name="keyed").click()
    team_page = page.url
    page.get_by_label("Key name (optional)").fill("ci")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key").input_value()
    assert key.startswith("mp-")
    screenshot(page, "admin", "09-key-shown-once")
    validate = server.media_url + "/api/v1/apikey/validate"
    assert httpx.get(validate, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    page.goto(team_page)  # loaded again: the key is never shown a second time
    expect(page.locator("#new-key")).to_have_count(0)

    # Found again from the Keys page by pasting the whole key (looked up by its hash).
    page.get_by_role("link", name="Keys", exact=True).click()
    page.get_by_label("Key id, prefix, or the whole key").fill(key)
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_role("row").filter(has_text="keyed")).to_contain_text(key[:10])
    screenshot(page, "admin", "09b-find-key")
    page.goto(team_page)

    page.get_by_role("button", name=f"Revoke key {key[:10]}").click()
    expect(page.get_by_role("status").first).to_contain_text("Revoked key")
    expect(page.get_by_text(re.compile("^revoked "))).to_be_visible()
    assert httpx.get(validate, headers={"Authorization": f"Bearer {key}"}).status_code == 401
    screenshot(page, "admin", "10-key-revoked")

    second = _admin(server, "POST", "/teams/keyed/keys", json={}).json()["data"]["key"]
    page.get_by_role("button", name="Suspend team").click()
    expect(page.get_by_role("status").first).to_contain_text("Suspended keyed")
    assert httpx.get(validate, headers={"Authorization": f"Bearer {second}"}).status_code == 401
    screenshot(page, "admin", "11-team-suspended")
    page.get_by_role("button", name="Lift suspension").click()
    expect(page.get_by_role("status").first).to_contain_text("Lifted")
    assert httpx.get(validate, headers={"Authorization": f"Bearer {second}"}).status_code == 200


def test_catalog_upstreams_logs_tasks_and_queue_pages(page: Page, server: RunningServer) -> None:
    _sign_in(page, server)
    page.get_by_role("link", name="Models and prices").click()
    expect(page.get_by_role("cell", name=BROKEN, exact=True)).to_be_visible()
    screenshot(page, "admin", "12-models")
    page.get_by_role("link", name=f"Edit {BROKEN}").click()
    spec = page.get_by_label("Spec (JSON; see docs/configuration.md)")
    shown = spec.input_value()
    assert SECRET_HEADER not in shown and SECRET_PASSWORD not in shown and "••••••" in shown
    spec.fill(spec.input_value().replace('"output": "0"', '"output": "7.5"'))
    screenshot(page, "admin", "13-model-edit")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").first).to_contain_text(f"Saved {BROKEN}")
    stored = _admin(server, "GET", "/models").json()["data"]["text_models"]
    broken = next(m for m in stored if m["id"] == BROKEN)
    assert broken["prices"]["output"] == "7.5"
    assert broken["deployments"][0]["headers"] == {"X-Upstream-Secret": SECRET_HEADER}  # kept, never shown
    assert broken["deployments"][0]["base_url"] == f"http://user:{SECRET_PASSWORD}@127.0.0.1:9/v1"

    page.get_by_role("link", name="Upstreams").click()
    row = page.locator("table").first.get_by_role("row").filter(has_text=BROKEN)
    expect(row).to_contain_text("cooling")
    expect(row).to_contain_text("unreachable")
    content = page.content()
    assert SECRET_HEADER not in content and SECRET_PASSWORD not in content
    screenshot(page, "admin", "14-upstreams")

    page.get_by_role("link", name="Request logs").click()
    page.get_by_label("Status").select_option("error")
    page.get_by_label("Model").fill(BROKEN)
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("tbody tr")
    expect(rows.first).to_contain_text("demo")
    assert rows.count() >= 3
    screenshot(page, "admin", "15-logs-filtered")
    rows.first.get_by_role("link").click()
    expect(page.get_by_text("Request id")).to_be_visible()
    screenshot(page, "admin", "16-log-detail")

    page.get_by_role("link", name="Tasks").click()
    expect(page.get_by_role("heading", name="Media tasks")).to_be_visible()
    expect(page.get_by_role("cell", name="local/sketch-image")).to_be_visible()
    screenshot(page, "admin", "17-tasks")
    page.get_by_role("link", name="Queue and workers").click()
    expect(page.locator("#queued")).to_be_visible()
    screenshot(page, "admin", "18-queue")


def test_phone_width_and_sign_out(browser: Browser, server: RunningServer) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    try:
        _sign_in(page, server)
        page.get_by_role("link", name="demo").click()
        expect(page.get_by_role("button", name="Add funds")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400, f"the page scrolls sideways at phone width ({width} px)"
        screenshot(page, "admin", "19-team-phone")
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("Admin token", exact=True)).to_be_visible()
        page.goto(server.media_url + "/console/admin/")
        expect(page.get_by_label("Admin token", exact=True)).to_be_visible()  # signed out: back to the sign-in page
    finally:
        context.close()
