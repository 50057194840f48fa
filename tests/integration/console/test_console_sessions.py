"""The console's foundation through a real `modelport serve`: sign-in, sessions, CSRF, rate limit, operator gate."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.console import ConsoleClient, csrf_of
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "console-admin-token-0123456789-abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(
        tmp_path_factory.mktemp("console"),
        MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
        MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE="1000",
    ) as running:
        yield running


@pytest.fixture
def console(server: RunningServer) -> Iterator[ConsoleClient]:
    client = ConsoleClient(server.media_url)
    yield client
    client.close()


def admin(server: RunningServer, method: str, path: str, **kwargs: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    return httpx.request(method, server.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


def new_key(server: RunningServer, team: str) -> tuple[str, str]:
    admin(server, "POST", "/teams", json={"name": team})
    created = admin(server, "POST", f"/teams/{team}/keys", json={"name": "console test"}).json()["data"]
    return created["key"], created["id"]


def cookie_payload(client: ConsoleClient) -> dict[str, object]:
    raw = client.http.cookies["modelport_console"]
    data = raw.split(".")[0]
    decoded: dict[str, object] = json.loads(base64.b64decode(data + "=" * (-len(data) % 4)))
    return decoded


def test_banner_prints_the_console_url(server: RunningServer) -> None:
    assert f"console:       {server.media_url}/console/   (an account or a team API key)" in server.banner


def test_pages_need_a_session(console: ConsoleClient) -> None:
    r = console.get("/")
    assert r.status_code == 303 and r.headers["location"] == "/console/sign-in"
    htmx = console.get("/", headers={"HX-Request": "true"})
    assert htmx.headers["hx-redirect"] == "/console/sign-in"


def test_sign_in_page_is_self_contained_and_accessible(console: ConsoleClient) -> None:
    r = console.get("/sign-in")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["cache-control"] == "no-store"
    assert '<label for="api_key">' in r.text and 'id="api_key"' in r.text and '<html lang="en">' in r.text
    # Nothing is loaded from another origin, and there is no inline script.
    assert "http://" not in r.text and "https://" not in r.text and "//cdn" not in r.text
    assert "<script>" not in r.text
    for src in ("vendor/htmx-2.0.11/htmx.min.js", "vendor/uplot-1.6.32/uPlot.iife.min.js", "console.js"):
        assert f'src="/console/static/{src}"' in r.text
        asset = console.get(f"/static/{src}")
        assert asset.status_code == 200 and "set-cookie" not in asset.headers
    for license_path in ("vendor/htmx-2.0.11/LICENSE", "vendor/uplot-1.6.32/LICENSE"):
        assert console.get(f"/static/{license_path}").status_code == 200


def test_sign_in_remembers_the_team_never_the_key(server: RunningServer, console: ConsoleClient) -> None:
    key, key_id = new_key(server, "console-a")
    r = console.sign_in(key)
    assert r.status_code == 303 and r.headers["location"] == "/console/"
    cookie = console.http.cookies["modelport_console"]
    assert key not in cookie
    payload = cookie_payload(console)
    assert payload["key_id"] == key_id and str(payload["team_id"]).startswith("team_")
    assert key not in json.dumps(payload)
    page = console.get("/")
    assert page.status_code == 200 and "console-a" in page.text and key not in page.text


def test_sign_in_goes_back_to_the_page_asked_for(server: RunningServer, console: ConsoleClient) -> None:
    key, _ = new_key(server, "console-next")
    page = console.get("/sign-in?next=%2Fbilling").text
    r = console.http.post("/sign-in", data={"api_key": key, "next": "/billing", "csrf_token": csrf_of(page)})
    assert r.headers["location"] == "/console/billing"
    other = ConsoleClient(server.media_url)
    try:
        evil = other.post_form("/sign-in", {"api_key": key, "next": "//evil.example/x"})
        assert evil.headers["location"] == "/console/"
    finally:
        other.close()


def test_bad_keys_are_refused(console: ConsoleClient) -> None:
    for key in ("", "mp-not-a-key", "x" * 3000):
        r = console.sign_in(key)
        assert r.status_code == 401 and "not accepted" in r.text
    # Past the sign-in form's cap (4 KiB), refused before it is parsed.
    r = console.sign_in("x" * 5000)
    assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
    assert "key_id" not in json.dumps(cookie_payload(console))


def test_forms_need_the_csrf_token(server: RunningServer, console: ConsoleClient) -> None:
    key, _ = new_key(server, "console-csrf")
    console.get("/sign-in")
    for data in ({"api_key": key}, {"api_key": key, "csrf_token": "forged"}):
        r = console.http.post("/sign-in", data=data)
        assert r.status_code == 403 and "reload the page" in r.text
    assert console.sign_in(key).status_code == 303
    # Signed in, a POST without the token is refused too; the header form (htmx) is accepted.
    assert console.http.post("/sign-out").status_code == 403
    token = csrf_of(console.get("/").text)
    assert console.http.post("/sign-out", headers={"X-CSRF-Token": token}).status_code == 303
    assert console.get("/").status_code == 303


def test_a_revoked_key_ends_its_session(server: RunningServer, console: ConsoleClient) -> None:
    key, key_id = new_key(server, "console-revoke")
    console.sign_in(key)
    assert console.get("/").status_code == 200
    assert admin(server, "POST", f"/keys/{key_id}/revoke").status_code == 200
    # The server runs with MODELPORT_AUTH_CACHE_SECONDS=0: the next request already sees it.
    r = console.get("/")
    assert r.status_code == 303 and r.headers["location"] == "/console/sign-in"
    assert console.sign_in(key).status_code == 401


def test_operator_sign_in(server: RunningServer, console: ConsoleClient) -> None:
    assert console.post_form("/admin/sign-in", {"admin_token": "wrong"}).status_code == 401
    r = console.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN})
    assert r.status_code == 303 and r.headers["location"] == "/console/admin/"
    assert ADMIN_TOKEN not in console.http.cookies["modelport_console"]
    assert "operator" in cookie_payload(console)


def test_sessions_expire_and_sign_in_is_rate_limited(tmp_path: Path) -> None:
    with run_server(
        tmp_path,
        MODELPORT_CONSOLE__SESSION_MAX_SECONDS="2",
        MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE="3",
    ) as server:
        assert server.demo_key is not None
        console = ConsoleClient(server.media_url)
        try:
            # No admin token: the operator console does not exist.
            assert console.get("/admin/sign-in").status_code == 404
            assert console.sign_in(server.demo_key).status_code == 303
            assert console.get("/").status_code == 200
            time.sleep(2.2)
            assert console.get("/").status_code == 303  # past session_max_seconds
            for _ in range(3):
                assert console.sign_in("mp-wrong").status_code == 401
            limited = console.sign_in("mp-wrong")  # the 4th failure from this address in a minute
            assert limited.status_code == 429 and "too many failed sign-in attempts" in limited.text
            assert int(limited.headers["retry-after"]) >= 1
            # A correct key is never locked out, from the same address too.
            assert console.sign_in(server.demo_key).status_code == 303
        finally:
            console.close()


def test_a_revoked_key_ends_sessions_in_every_worker_at_once(tmp_path: Path) -> None:
    """Two worker processes, keys cached 2 s: the session's row is read on every request, so the
    revocation ends the session in the process that did not serve it at once (each request below is a new
    connection, so both workers answer some)."""
    with run_server(
        tmp_path, "--workers", "2", MODELPORT_AUTH_CACHE_SECONDS="2", MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN
    ) as server:
        key, key_id = new_key(server, "console-workers")
        with httpx.Client(base_url=server.media_url + "/console", timeout=30) as client:
            page = client.get("/sign-in").text
            assert client.post("/sign-in", data={"api_key": key, "csrf_token": csrf_of(page)}).status_code == 303
            cookie = {"modelport_console": client.cookies["modelport_console"]}

        def overview() -> int:
            # A new connection each time, and always the signed-in cookie (never the cleared one).
            return httpx.get(server.media_url + "/console/", cookies=cookie, timeout=30).status_code

        assert [overview() for _ in range(6)] == [200] * 6
        assert admin(server, "POST", f"/keys/{key_id}/revoke").status_code == 200
        assert [overview() for _ in range(10)] == [303] * 10
