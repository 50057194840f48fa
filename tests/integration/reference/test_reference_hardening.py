"""The API reference takes its absolute URLs from the settings, never from the request, and is never
framed (issue 21, item 12), through a real `modelport serve`."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.browser import chromium
from tests.support.server import RunningServer, run_server

PUBLIC_TEXT = "https://llm.example.com"
PAGES = ("/docs", "/docs/api/media", "/docs/api/text", "/docs/guides/", "/docs/guides/errors")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(tmp_path_factory.mktemp("reference-hardening"), MODELPORT_PUBLIC_TEXT_URL=PUBLIC_TEXT) as running:
        yield running


def test_the_text_document_names_the_configured_gateway_whatever_the_host_header(server: RunningServer) -> None:
    for headers in ({}, {"Host": "evil.example"}, {"Host": "evil.example:1234", "X-Forwarded-Host": "evil.example"}):
        document = httpx.get(server.media_url + "/docs/openapi/text.json", headers=headers)
        assert document.status_code == 200
        assert document.json()["servers"] == [{"url": PUBLIC_TEXT, "description": "text gateway"}]
        assert "evil.example" not in document.text
    media = httpx.get(server.media_url + "/openapi.json", headers={"Host": "evil.example"})
    assert "evil.example" not in media.text


def test_reference_pages_cannot_be_framed_and_load_only_this_host(server: RunningServer) -> None:
    model_page = "/docs/models/local/sketch-image"
    for path in (*PAGES, model_page):
        page = httpx.get(server.media_url + path, headers={"Host": "evil.example"})
        assert page.status_code == 200, path
        assert page.headers["x-frame-options"] == "DENY"
        csp = page.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self';" in csp and "object-src 'none'" in csp
        # "Try it out" may call this host and the configured gateway, nothing named by the request.
        assert f"connect-src 'self' {PUBLIC_TEXT};" in csp
        assert "evil.example" not in csp and "evil.example" not in page.text


def test_without_a_public_text_url_the_gateway_url_comes_from_the_public_media_url(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with run_server(
        tmp_path_factory.mktemp("reference-default"), MODELPORT_PUBLIC_MEDIA_URL="https://media.example.org"
    ) as server:
        port = server.text_url.rsplit(":", 1)[1]
        document = httpx.get(server.media_url + "/docs/openapi/text.json", headers={"Host": "evil.example"}).json()
        assert document["servers"][0]["url"] == f"https://media.example.org:{port}"


def test_swagger_ui_renders_under_the_policy_in_a_real_browser(server: RunningServer) -> None:
    """The CSP must not break the page it protects: Chromium loads both documents with no violation."""
    with chromium() as browser:
        page = browser.new_page()
        refused: list[str] = []
        page.on(
            "console",
            lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None,
        )
        for host in ("media", "text"):
            page.goto(server.media_url + f"/docs/api/{host}")
            page.wait_for_selector(".opblock", timeout=30_000)
            assert page.locator(".opblock").count() > 3
        assert not refused, refused
