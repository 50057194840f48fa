"""A real browser for page tests: Playwright's Python package driving Debian's Chromium (/usr/bin/chromium).

No browser download: Playwright is pointed at the system Chromium (`apt-get install chromium`). Without it
the tests fail (never skip): CI installs it. Screenshots go under test-artifacts/screenshots/ (gitignored).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = Path(os.environ.get("MODELPORT_TEST_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


@contextmanager
def chromium() -> Iterator[Browser]:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: apt-get install chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Page, folder: str, name: str) -> Path:
    path = ARTIFACTS / folder / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path
