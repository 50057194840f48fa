"""The operator console over HTTP (no browser): absent without a token, sessions, CSRF, actions, filters, pages."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.console import ConsoleClient
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "operator-pages-admin-token-0123456789"
DEAD = "dead/model"


def _admin(server: RunningServer, method: str, path: str, **kwargs: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    return httpx.request(method, server.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {"MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN, "MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE": "1000"}
    with run_server(tmp_path_factory.mktemp("operator-pages"), env=env) as running:
        spec = {"deployments": [{"kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]}
        assert _admin(running, "PUT", f"/models/{DEAD}", json={"kind": "text", "spec": spec}).status_code == 200
        yield running


@pytest.fixture
def operator(server: RunningServer) -> Iterator[ConsoleClient]:
    client = ConsoleClient(server.media_url)
    r = client.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN})
    assert r.status_code == 303 and r.headers["location"] == "/console/admin/"
    yield client
    client.close()


def test_the_operator_console_is_absent_without_an_admin_token(tmp_path: Path) -> None:
    with run_server(tmp_path) as plain:
        client = ConsoleClient(plain.media_url)
        try:
            for path in ("/admin/", "/admin/sign-in", "/admin/teams/demo", "/admin/logs", "/admin/queue"):
                assert client.get(path).status_code == 404, path
            # A POST with a valid CSRF token (from the team sign-in page) still finds nothing.
            r = client.post_form("/admin/teams", {"name": "sneaky"}, csrf_from="/sign-in")
            assert r.status_code == 404
        finally:
            client.close()


def test_pages_need_an_operator_session_and_a_team_session_is_not_one(server: RunningServer) -> None:
    client = ConsoleClient(server.media_url)
    try:
        r = client.get("/admin/")
        assert r.status_code == 303 and r.headers["location"].startswith("/console/admin/sign-in")
        assert client.sign_in(server.demo_key or "").status_code == 303  # a team's session
        r = client.get("/admin/teams/demo")
        assert r.status_code == 303 and r.headers["location"].startswith("/console/admin/sign-in")
    finally:
        client.close()


def test_every_action_needs_the_csrf_token(server: RunningServer, operator: ConsoleClient) -> None:
    r = operator.http.post("/admin/teams", data={"name": "forged"})
    assert r.status_code == 403
    assert _admin(server, "GET", "/teams/forged").status_code == 404
    r = operator.http.post("/admin/teams/demo/suspend", data={"csrf_token": "not-the-token"})
    assert r.status_code == 403
    assert _admin(server, "GET", "/teams/demo").json()["data"]["suspended"] is False


def test_actions_reach_the_same_service_as_the_admin_api(server: RunningServer, operator: ConsoleClient) -> None:
    r = operator.post_form("/admin/teams", {"name": "pages"}, csrf_from="/admin/")
    assert r.status_code == 303
    team_path = r.headers["location"].removeprefix("/console")
    team_id = team_path.rsplit("/", 1)[1]
    assert _admin(server, "GET", f"/teams/{team_id}").json()["data"]["name"] == "pages"

    # A refused top-up says why on the next page and changes nothing.
    r = operator.post_form(team_path + "/topup", {"amount_usd": "1.0000001"}, csrf_from=team_path)
    page = operator.get(team_path).text
    assert 'role="alert"' in page and "Top-up refused" in page
    assert _admin(server, "GET", "/teams/pages/ledger").json()["data"]["entries"] == []

    operator.post_form(team_path + "/topup", {"amount_usd": "100", "note": "wire 7"}, csrf_from=team_path)
    data = _admin(server, "GET", "/teams/pages").json()["data"]
    assert data["tier"] == "tier2" and data["balance_usd"] == 100
    assert _admin(server, "GET", "/teams/pages/ledger").json()["data"]["entries"][0]["note"] == "wire 7"

    operator.post_form(team_path + "/tier", {"tier": "free"}, csrf_from=team_path)
    operator.post_form(team_path + "/flags", {"asset_service": "on"}, csrf_from=team_path)
    data = _admin(server, "GET", "/teams/pages").json()["data"]
    assert data["tier"] == "free" and data["asset_service"] is True and data["log_retention"] is False
    operator.post_form(team_path + "/tier", {"tier": "gold"}, csrf_from=team_path)
    assert "unknown tier" in operator.get(team_path).text

    created = operator.post_form(team_path + "/keys", {"name": "from the console"}, csrf_from=team_path)
    key = re.search(r'id="new-key" readonly value="([^"]+)"', created.text)
    assert created.status_code == 200 and key is not None
    assert key.group(1) not in operator.get(team_path).text  # shown once
    key_id = _admin(server, "GET", "/teams/pages/keys").json()["data"]["keys"][0]["id"]
    r = operator.post_form(f"/admin/keys/{key_id}/revoke", {}, csrf_from=team_path)
    assert r.status_code == 303 and r.headers["location"] == f"/console{team_path}"
    assert _admin(server, "GET", "/teams/pages/keys").json()["data"]["keys"][0]["active"] is False


def test_logs_page_filters_and_pages_without_gaps_or_repeats(server: RunningServer, operator: ConsoleClient) -> None:
    headers = {"Authorization": f"Bearer {server.demo_key}"}
    body = {"model": DEAD, "messages": [{"role": "user", "content": "hi"}]}
    for _ in range(57):
        r = httpx.post(server.text_url + "/v1/chat/completions", headers=headers, json=body, timeout=60)
        assert r.status_code in (429, 502, 503), r.text

    def ids(path: str) -> tuple[list[str], str | None]:
        page = operator.get(path).text
        found = re.findall(r'href="/console/admin/logs/(req_[^"]+)"', page)
        older = re.search(r'href="/console/admin/logs(\?[^"]*before=[^"]+)">Older', page)
        return found, None if older is None else older.group(1).replace("&amp;", "&")

    deadline = time.monotonic() + 60
    while True:  # log rows are written in batches, shortly after each answer: wait for all 57
        first, older = ids("/admin/logs?team=demo&model=dead/model&status=error")
        second, last = ids("/admin/logs" + older) if older is not None else ([], None)
        if len(second) >= 7 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(first) == 50 and older is not None and "team=demo" in older
    assert len(second) == 7 and last is None
    assert not set(first) & set(second)
    detail = operator.get(f"/admin/logs/{first[0]}")
    assert detail.status_code == 200 and DEAD in detail.text
    assert operator.get("/admin/logs/req_nope").status_code == 404

    nobody = operator.get("/admin/logs?team=nobody").text
    assert "There is no team" in nobody and "/console/admin/logs/req_" not in nobody
    assert ids("/admin/logs?team=demo&status=success")[0] == []
    upstreams = operator.get("/admin/upstreams").text
    assert "cooling" in upstreams and DEAD in upstreams


def test_tasks_and_queue_pages_show_a_new_task(server: RunningServer, operator: ConsoleClient) -> None:
    r = httpx.post(
        server.media_url + "/local/sketch-image",
        headers={"Authorization": f"Bearer {server.demo_key}"},
        json={"prompt": "a lighthouse"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    task_id = r.json()["data"]["task_id"]
    assert task_id in operator.get("/admin/tasks?team=demo").text
    assert task_id not in operator.get("/admin/tasks?team=pages-nobody").text
    assert task_id in operator.get("/admin/tasks?model=local/sketch-image").text
    queue = operator.get("/admin/queue")
    assert queue.status_code == 200 and 'id="queued"' in queue.text and "in-memory, per process" in queue.text


def test_a_suspended_team_cannot_sign_in_and_its_session_ends(server: RunningServer, operator: ConsoleClient) -> None:
    _admin(server, "POST", "/teams", json={"name": "paused-console"})
    key = _admin(server, "POST", "/teams/paused-console/keys", json={}).json()["data"]["key"]
    team = ConsoleClient(server.media_url)
    try:
        assert team.sign_in(key).status_code == 303
        assert team.get("/").status_code == 200
        team_id = _admin(server, "GET", "/teams/paused-console").json()["data"]["id"]
        operator.post_form(f"/admin/teams/{team_id}/suspend", {}, csrf_from=f"/admin/teams/{team_id}")
        assert team.get("/").status_code == 303  # the session ended (tests run with a 0 s key cache)
        refused = team.sign_in(key)
        assert refused.status_code == 401 and "suspended" in refused.text
    finally:
        team.close()


def test_find_a_key_of_any_team_by_id_prefix_or_the_whole_key(server: RunningServer, operator: ConsoleClient) -> None:
    _admin(server, "POST", "/teams", json={"name": "findme"})
    created = _admin(server, "POST", "/teams/findme/keys", json={"name": "leaky"}).json()["data"]
    for query in (created["key"], created["key"][:10], created["id"]):
        page = operator.post_form("/admin/keys", {"q": query}).text
        assert "findme" in page and f"/console/admin/keys/{created['id']}/revoke" in page, query
        assert created["key"] not in page.replace(f'value="{created["key"]}"', "")  # only echoed in the box
    nothing = operator.post_form("/admin/keys", {"q": "mp-zzzzzzz"}).text
    assert "No key matches." in nothing
    assert "No key matches." in operator.post_form("/admin/keys", {"q": "%"}).text  # LIKE wildcards are escaped


def test_operator_sessions_expire_and_operator_sign_in_is_rate_limited(tmp_path: Path) -> None:
    env = {
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        "MODELPORT_CONSOLE__SESSION_MAX_SECONDS": "4",
        "MODELPORT_ADMIN_FAILURES_PER_MINUTE": "2",
    }
    with run_server(tmp_path, env=env) as short:
        client = ConsoleClient(short.media_url)
        try:
            signed_in = time.monotonic()
            assert client.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
            first = client.get("/admin/")
            assert first.status_code == 200 or time.monotonic() - signed_in > 4  # (a very slow machine)
            time.sleep(max(0.0, 4.5 - (time.monotonic() - signed_in)))
            expired = client.get("/admin/")
            assert expired.status_code == 303 and expired.headers["location"].startswith("/console/admin/sign-in")
            # Successes are not counted; two failures use the address's budget of admin-token attempts.
            assert client.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
            assert client.post_form("/admin/sign-in", {"admin_token": "wrong"}).status_code == 401
            assert client.post_form("/admin/sign-in", {"admin_token": "wrong"}).status_code == 401
            limited = client.post_form("/admin/sign-in", {"admin_token": "wrong"})
            assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
            # The admin API counts in the same place: a wrong token from this address is refused there too...
            api = httpx.get(short.media_url + "/admin/v1/teams", headers={"Authorization": "Bearer wrong"})
            assert api.status_code == 429 and api.json()["code"] == 429
            # ...and the right token is never refused by the count.
            assert client.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
        finally:
            client.close()
