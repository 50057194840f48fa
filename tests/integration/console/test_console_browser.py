"""The team console in a real browser: Debian's Chromium driven by Playwright, against a real `modelport serve`.

Signs in with a team key, creates and revokes a key, makes a request with the official OpenAI SDK and
sees it in the logs page (and live tail) and the usage chart, exports CSV. A screenshot of every page
goes to test-artifacts/screenshots/console/ (laptop width, and phone width for some). Never skipped: a
missing Chromium is a failure (`.ci/run` installs it).
"""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import OpenAI
from playwright.sync_api import Browser, ConsoleMessage, Page, ViewportSize, expect, sync_playwright

from tests.integration.console.conftest import MODEL, ConsoleServer, Team

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "screenshots" / "console"
LAPTOP: ViewportSize = {"width": 1366, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), "Chromium is missing: apt-get install -y chromium (.ci/run installs it)"
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


class Watch:
    """Console errors and requests to other origins, collected while a page runs."""

    def __init__(self, page: Page, origin: str) -> None:
        self.errors: list[str] = []
        self.foreign: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda req: None if req.url.startswith(origin) else self.foreign.append(req.url))
        page.on("response", lambda res: self.errors.append(f"{res.status} {res.url}") if res.status >= 400 else None)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sdk_request(console_server: ConsoleServer, team: Team, text: str) -> str:
    client = OpenAI(base_url=console_server.text_url + "/v1", api_key=team.key, max_retries=0, timeout=60)
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": text}], extra_headers={"X-Svc-User-Id": "browser-user-1"}
    )
    completion = raw.parse()
    assert completion.choices[0].message.content
    return raw.headers["x-request-id"]


def start_task(console_server: ConsoleServer, team: Team) -> str:
    r = httpx.post(
        console_server.media_url + "/local/sketch-image",
        json={"prompt": "a lighthouse at dusk", "width": 128, "height": 96},
        headers={"Authorization": f"Bearer {team.key}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    task_id: str = r.json()["data"]["task_id"]
    return task_id


def test_team_console_in_chromium(console_server: ConsoleServer, browser: Browser) -> None:
    team = console_server.team("browser-team")
    context = browser.new_context(viewport=LAPTOP, accept_downloads=True)
    page = context.new_page()
    watch = Watch(page, console_server.media_url)
    console = console_server.media_url + "/console"

    # Signed out: the console sends the browser to the sign-in page.
    page.goto(console + "/")
    expect(page).to_have_url(re.compile(r"/console/sign-in$"))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shot(page, "01-sign-in")
    page.get_by_text("Sign in with a team API key instead").click()  # beside the email form (issue 37)
    page.get_by_label("Team API key").fill("mp-not-a-key")
    page.get_by_role("button", name="Sign in with the key").click()
    expect(page.get_by_role("alert")).to_contain_text("not accepted")
    shot(page, "02-sign-in-refused")
    page.get_by_text("Sign in with a team API key instead").click()
    page.get_by_label("Team API key").fill(team.key)
    page.get_by_role("button", name="Sign in with the key").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.locator(".who")).to_contain_text("browser-team")
    watch.errors.clear()  # the refused sign-in above was a 401, on purpose

    # A request with the official SDK, and a media task.
    first = sdk_request(console_server, team, "Hello from the browser test")
    task_id = start_task(console_server, team)

    # Request logs: the request appears (the writer flushes within a second or so).
    deadline = time.monotonic() + 30
    page.goto(console + "/logs")
    while page.get_by_role("link", name=first).count() == 0 and time.monotonic() < deadline:
        time.sleep(0.5)
        page.reload()
    expect(page.get_by_role("link", name=first)).to_be_visible()
    shot(page, "05-logs")

    # Live tail: a second request appears without a reload.
    page.get_by_label("Live tail").check()
    expect(page.locator("#tail-status")).to_contain_text("Live")
    second = sdk_request(console_server, team, "Second request, for the live tail")
    expect(page.get_by_role("link", name=second)).to_be_visible(timeout=30_000)
    shot(page, "06-logs-live-tail")
    page.get_by_label("Live tail").uncheck()

    # Filters: by end user, then by a status that matches nothing.
    page.get_by_label("End user").fill("browser-user-1")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name=first)).to_be_visible()
    page.get_by_label("Status").select_option("error")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No requests match these filters")).to_be_visible()
    page.get_by_role("link", name="Reset").click()

    # CSV export of the logs.
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Export CSV").click()
    exported = Path(download_info.value.path()).read_text("utf-8")
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert {first, second} <= {r["request_id"] for r in rows}

    # The detail view, with the retained input and result.
    page.get_by_role("link", name=first).click()
    expect(page.locator("pre.payload").first).to_contain_text("Hello from the browser test")
    shot(page, "07-log-detail")

    # Usage: the chart is drawn (uPlot's canvas) and the table has the model.
    page.goto(console + "/usage")
    expect(page.locator("#chart-spend-model canvas")).to_have_count(1)
    # The chart was drawn with the two requests' spend in it (uPlot's own data, read back from the plot).
    drawn = page.evaluate("document.getElementById('chart-spend-model')._plot.data[1].reduce((a, b) => a + b, 0)")
    assert abs(drawn - 0.04) < 1e-9
    expect(page.locator("#chart-requests .u-legend")).to_contain_text("requests")
    model_row = page.locator("table:has(caption:text('Usage by model')) tbody tr").first
    expect(model_row).to_contain_text(MODEL)
    expect(model_row).to_contain_text("$0.040000")
    shot(page, "08-usage")
    with page.expect_download() as usage_download:
        page.get_by_role("link", name="Export CSV").click()
    usage_rows = list(csv.DictReader(io.StringIO(Path(usage_download.value.path()).read_text("utf-8"))))
    assert sum(int(r["requests"]) for r in usage_rows if r["model"] == MODEL) == 2

    # API keys: create one (shown once, with a copy button), then revoke it.
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name (optional)").fill("made-in-chromium")
    page.get_by_role("button", name="Create key").click()
    new_key = page.locator("#new-key").input_value()
    assert new_key.startswith("mp-")
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#new-key-status")).to_contain_text("Copied")
    shot(page, "09-keys-created")
    assert console_server.chat(new_key).status_code == 200
    page.get_by_role("button", name="Revoke key made-in-chromium").click()
    expect(page.locator("tr:has-text('made-in-chromium')")).to_contain_text("revoked")
    shot(page, "10-keys-revoked")
    assert console_server.chat(new_key).status_code == 401

    # Tasks: the task, its frozen and charged amounts, and its result link once it has run.
    page.goto(console + "/tasks")
    expect(page.get_by_role("link", name=task_id)).to_be_visible()
    deadline = time.monotonic() + 60
    while "success" not in page.locator(f"tr:has-text('{task_id}')").inner_text() and time.monotonic() < deadline:
        time.sleep(0.5)
        page.reload()
    expect(page.locator(f"tr:has-text('{task_id}')")).to_contain_text("success")
    shot(page, "11-tasks")
    page.get_by_role("link", name=task_id).click()
    expect(page.get_by_role("link", name=re.compile("image"))).to_be_visible()
    shot(page, "12-task-detail")

    for path, heading, name in (
        ("/assets", "Assets", "13-assets"),
        ("/billing", "Billing", "14-billing"),
        ("/webhooks", "Webhook secret", "15-webhooks"),
    ):
        page.goto(console + path)
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        shot(page, name)
    page.get_by_role("button", name="Rotate secret").click()
    expect(page.locator("#secret")).to_have_value(re.compile(r"^whsec_"))
    shot(page, "16-webhooks-rotated")

    page.goto(console + "/")
    expect(page.locator("#chart-spend canvas")).to_have_count(1)
    # Every charge: three requests at $0.02 and the sketch task's $0.002.
    expect(page.locator("figure:has(#chart-spend) figcaption")).to_contain_text("$0.0620 in all")
    shot(page, "03-overview")

    # Keyboard: the skip link is the first stop and moves focus to the page's content.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()

    # Phone width: the same pages stay readable (navigation scrolls; tables scroll in their box).
    phone = browser.new_context(viewport=PHONE, storage_state=context.storage_state())
    small = phone.new_page()
    Watch(small, console_server.media_url)
    for path, name in (("/", "04-overview-phone"), ("/logs", "05b-logs-phone"), ("/usage", "08b-usage-phone")):
        small.goto(console + path)
        width = small.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{path} is {width}px wide on a phone"
        shot(small, name)
    phone.close()

    # Sign out ends the session.
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/console/sign-in$"))
    page.goto(console + "/usage")
    expect(page).to_have_url(re.compile(r"/console/sign-in\?next=%2Fusage$"))

    assert watch.foreign == [], f"requests to other origins: {watch.foreign}"
    assert watch.errors == [], f"browser console errors: {watch.errors}"
    context.close()
