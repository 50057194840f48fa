"""The guides under docs/api/ as the package renders them, and how `GET /` tells a browser from a client."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.requests import Request

from modelport.apps.factory import wants_html
from modelport.media.reference.guides import guide, guides, slug

DOCS = Path(__file__).resolve().parents[4] / "docs" / "api"


def test_every_guide_in_docs_api_renders_with_its_title_and_the_index_first() -> None:
    rendered = guides()
    assert set(rendered) == {p.stem for p in DOCS.glob("*.md")}
    assert next(iter(rendered)) == "README"
    tasks = rendered["tasks"]
    assert tasks.title == "Media host: tasks"
    assert "<h1" in tasks.html and "<table>" in tasks.html  # GitHub tables are on
    # The index's own order: authentication is its first link.
    assert list(rendered)[1] == "authentication"


def test_links_between_guides_point_at_the_guide_pages_and_anchors_exist() -> None:
    rendered = guides()
    hrefs = {h for g in rendered.values() for h in re.findall(r'href="([^"]+)"', g.html)}
    local = [h for h in hrefs if h.startswith("/docs/guides/")]
    assert "/docs/guides/errors" in local and not any(h.endswith(".md") for h in hrefs)
    for href in local:
        page, _, anchor = href.removeprefix("/docs/guides/").partition("#")
        target = rendered["README" if page == "" else page]
        if anchor:
            assert f'id="{anchor}"' in target.html, href


def test_raw_html_in_a_guide_is_text_and_names_are_checked() -> None:
    assert guide("../pyproject") is None and guide("Tasks") is None and guide("nope") is None
    found = guide("tasks")
    assert found is not None and "<script" not in found.html
    assert slug("The task object") == "the-task-object" and slug("GET /v1/logs (filters)") == "get-v1logs-filters"


def _request(accept: str | None) -> Request:
    headers = [] if accept is None else [(b"accept", accept.encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", True),  # Chromium, Firefox
        ("text/html", True),
        (None, False),
        ("*/*", False),  # curl, SDKs
        ("application/json", False),
        ("application/json, text/html;q=0.5", False),
        ("text/html;q=0", False),
        ("text/html;q=bogus", False),
    ],
)
def test_a_browser_is_told_from_an_api_client_by_accept(accept: str | None, html: bool) -> None:
    assert wants_html(_request(accept)) is html
