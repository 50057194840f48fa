"""The front door and the API reference through a real `modelport serve`."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.support.server import RunningServer, run_server

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(tmp_path_factory.mktemp("reference")) as running:
        yield running


def test_get_root_sends_a_browser_to_the_console_and_keeps_json_for_clients(server: RunningServer) -> None:
    browser = httpx.get(server.media_url + "/", headers=BROWSER)
    assert browser.status_code == 303 and browser.headers["location"] == "/console/"
    assert browser.headers["vary"] == "Accept"
    for headers in ({}, {"Accept": "*/*"}, {"Accept": "application/json"}):
        client = httpx.get(server.media_url + "/", headers=headers)
        assert client.status_code == 200 and client.json()["object"] == "service"
        assert client.headers["vary"] == "Accept"
    assert httpx.head(server.media_url + "/").status_code == 200  # Claude Code's probe
    # The text gateway is for API clients only: JSON whatever the Accept.
    text = httpx.get(server.text_url + "/", headers=BROWSER)
    assert text.status_code == 200 and text.json()["name"] == "modelport text gateway"


def test_docs_index_links_both_hosts_the_guides_and_the_model_pages(server: RunningServer) -> None:
    page = httpx.get(server.media_url + "/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    hrefs = set(re.findall(r'href="([^"]+)"', page.text))
    assert {"/docs/api/media", "/docs/api/text", "/docs/guides/tasks", "/docs/models/local/sketch-image"} <= hrefs
    for href in sorted(h for h in hrefs if h.startswith("/docs")):
        assert httpx.get(server.media_url + href).status_code == 200, href
    assert httpx.get(server.media_url + "/docs/", follow_redirects=True).url.path == "/docs"


def test_swagger_pages_load_only_this_hosts_files_and_both_documents_are_served(server: RunningServer) -> None:
    for host, document in (("media", "/openapi.json"), ("text", "/docs/openapi/text.json")):
        page = httpx.get(server.media_url + f"/docs/api/{host}")
        assert page.status_code == 200 and f'data-openapi-url="{document}"' in page.text
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources and all(s.startswith(("/", "#")) for s in sources), sources  # nothing from another origin
        for asset in (s for s in sources if s.startswith("/docs/static/")):
            r = httpx.get(server.media_url + asset)
            assert r.status_code == 200 and int(r.headers["content-length"]) > 100, asset
    media = httpx.get(server.media_url + "/openapi.json").json()
    text = httpx.get(server.media_url + "/docs/openapi/text.json").json()
    direct = httpx.get(server.text_url + "/openapi.json").json()
    assert text["paths"] == direct["paths"] and "/v1/chat/completions" in text["paths"]
    assert text["servers"] == [{"url": server.text_url, "description": "text gateway"}]
    assert "/api/v1/team/balance" in media["paths"] and not any(p.startswith("/docs") for p in media["paths"])
    assert httpx.get(server.media_url + "/docs/api/admin").status_code == 404


def test_guides_render_and_unknown_or_unlisted_files_are_404(server: RunningServer) -> None:
    index = httpx.get(server.media_url + "/docs/guides/")
    assert index.status_code == 200 and "<h1" in index.text and 'href="/docs/guides/authentication"' in index.text
    auth = httpx.get(server.media_url + "/docs/guides/authentication")
    assert auth.status_code == 200 and "<table>" in auth.text and "suspended" in auth.text
    for path in (
        "/docs/guides/nope",
        "/docs/guides/..%2Fpyproject",
        "/docs/static/swagger-ui/index.j2",
        "/docs/static/reference/../guides.py",
        "/docs/static/reference/nope.css",
    ):
        r = httpx.get(server.media_url + path)
        assert r.status_code == 404 and r.json()["code"] == 404, path
    # The per-model pages are unchanged.
    model = httpx.get(server.media_url + "/docs/models/local/sketch-image")
    assert model.status_code == 200 and "local/sketch-image" in model.text


def test_the_banner_names_the_api_reference(server: RunningServer) -> None:
    assert f"API reference: {server.media_url}/docs" in server.banner
