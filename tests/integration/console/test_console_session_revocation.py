"""Console sessions end on the server (issue 21, item 1), through a real `modelport serve --workers 2`.

A copied cookie stops working at once, on every process, when its session is signed out, its key
revoked, its team suspended, or an operator ends the team's sessions (admin API, CLI, operator console).
Each check below opens a new connection per request, so both worker processes answer some of them.
SQLite and PostgreSQL alike: the session's state is in the database.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.console import ConsoleClient, csrf_of
from tests.support.databases import BACKENDS, migrated_postgres_database
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "session-revocation-admin-token-0123456789"
CHECKS = 8  # requests per check, each on a new connection (both workers answer some)


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp(f"sessions-{request.param}")
    env = {"MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN, "MODELPORT_AUTH_CACHE_SECONDS": "30"}
    if request.param == "sqlite":
        with run_server(tmp, "--workers", "2", env=env) as running:
            yield running
        return
    loop = asyncio.new_event_loop()
    database = migrated_postgres_database()
    env["MODELPORT_DATABASE_URL"] = loop.run_until_complete(database.__aenter__())
    try:
        with run_server(tmp, "--workers", "2", env=env) as running:
            yield running
    finally:
        loop.run_until_complete(database.__aexit__(None, None, None))
        loop.close()


def admin(server: RunningServer, method: str, path: str, **kwargs: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    return httpx.request(method, server.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


def new_team(server: RunningServer, name: str) -> tuple[str, str, str]:
    """(team id, key, key id)"""
    team = admin(server, "POST", "/teams", json={"name": name}).json()["data"]
    created = admin(server, "POST", f"/teams/{name}/keys", json={"name": "first"}).json()["data"]
    return team["id"], created["key"], created["id"]


def signed_in(server: RunningServer, key: str) -> ConsoleClient:
    client = ConsoleClient(server.media_url)
    assert client.sign_in(key).status_code == 303
    return client


def statuses(server: RunningServer, cookie: str, path: str = "/console/") -> set[int]:
    """The status of `path` for a copy of the cookie, each request on a new connection."""
    return {
        httpx.get(server.media_url + path, cookies={"modelport_console": cookie}, timeout=30).status_code
        for _ in range(CHECKS)
    }


def test_sign_out_ends_a_copied_cookie_everywhere(server: RunningServer) -> None:
    _, key, _ = new_team(server, "rev-signout")
    browser = signed_in(server, key)
    copy = browser.http.cookies["modelport_console"]
    token = csrf_of(browser.get("/keys").text)
    assert statuses(server, copy) == {200}
    assert browser.http.post("/sign-out", data={"csrf_token": token}).status_code == 303
    assert statuses(server, copy) == {303}
    # The copy's CSRF token is still the one it had: creating a key with it is refused all the same.
    refused = httpx.post(
        server.media_url + "/console/keys",
        data={"name": "stolen", "csrf_token": token},
        cookies={"modelport_console": copy},
        timeout=30,
    )
    assert refused.status_code == 303 and refused.headers["location"] == "/console/sign-in"
    keys = admin(server, "GET", "/teams/rev-signout/keys").json()["data"]["keys"]
    assert [k["name"] for k in keys] == ["first"]
    browser.close()


def test_signing_in_again_ends_the_browsers_previous_session(server: RunningServer) -> None:
    _, key, _ = new_team(server, "rev-again")
    browser = signed_in(server, key)
    first = browser.http.cookies["modelport_console"]
    # Signed in, /sign-in redirects: the form is posted with the token of a signed-in page.
    assert browser.post_form("/sign-in", {"api_key": key}, csrf_from="/").status_code == 303
    assert statuses(server, first) == {303}
    assert statuses(server, browser.http.cookies["modelport_console"]) == {200}
    browser.close()


def test_revocation_and_suspension_end_sessions_for_good(server: RunningServer) -> None:
    """Keys are cached for 30 s in this server: the session check does not wait for that cache."""
    _, key, key_id = new_team(server, "rev-suspend")
    second = admin(server, "POST", "/teams/rev-suspend/keys", json={"name": "second"}).json()["data"]
    by_first, by_second = signed_in(server, key), signed_in(server, second["key"])
    first_cookie, second_cookie = (
        by_first.http.cookies["modelport_console"],
        by_second.http.cookies["modelport_console"],
    )
    assert admin(server, "POST", f"/keys/{key_id}/revoke").status_code == 200
    assert statuses(server, first_cookie) == {303}
    assert statuses(server, second_cookie) == {200}  # another key of the team: not touched
    assert admin(server, "POST", "/teams/rev-suspend/suspend").status_code == 200
    assert statuses(server, second_cookie) == {303}
    assert admin(server, "POST", "/teams/rev-suspend/unsuspend").status_code == 200
    assert statuses(server, second_cookie) == {303}  # ended, not paused
    by_first.close()
    by_second.close()


def test_an_operator_ends_every_session_of_a_team(server: RunningServer, tmp_path: Path) -> None:
    _, key, _ = new_team(server, "rev-ended")
    _, other_key, _ = new_team(server, "rev-bystander")
    sessions = [signed_in(server, key) for _ in range(2)]
    bystander = signed_in(server, other_key)
    answer = admin(server, "POST", "/teams/rev-ended/end-sessions")
    assert answer.status_code == 200 and answer.json()["data"]["sessions_ended"] == 2
    for session in sessions:
        assert statuses(server, session.http.cookies["modelport_console"]) == {303}
    assert statuses(server, bystander.http.cookies["modelport_console"]) == {200}

    # The CLI, on the same database.
    again = signed_in(server, key)
    cli = server.cli("admin", "team", "end-sessions", "rev-ended", "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["sessions_ended"] == 1
    assert statuses(server, again.http.cookies["modelport_console"]) == {303}

    # The operator console: the team page shows the count and ends them.
    last = signed_in(server, key)
    operator = ConsoleClient(server.media_url)
    assert operator.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
    team_id = admin(server, "GET", "/teams/rev-ended").json()["data"]["id"]
    page = operator.get(f"/admin/teams/{team_id}").text
    assert re.search(r'id="console-sessions">1 console session signed in', page)
    ended = operator.post_form(f"/admin/teams/{team_id}/end-sessions", {}, csrf_from=f"/admin/teams/{team_id}")
    assert ended.status_code == 303
    assert "Ended 1 console session of rev-ended." in operator.get(f"/admin/teams/{team_id}").text
    assert statuses(server, last.http.cookies["modelport_console"]) == {303}
    assert statuses(server, bystander.http.cookies["modelport_console"]) == {200}
    # Signing the operator out ends the operator's session the same way.
    operator_cookie = operator.http.cookies["modelport_console"]
    token = csrf_of(operator.get("/admin/").text)
    assert operator.http.post("/sign-out", data={"csrf_token": token}).status_code == 303
    assert statuses(server, operator_cookie, "/console/admin/") == {303}
    for client in (*sessions, bystander, again, last, operator):
        client.close()


def test_signing_out_ends_a_live_tail_opened_with_a_copy(server: RunningServer) -> None:
    _, key, _ = new_team(server, "rev-tail")
    browser = signed_in(server, key)
    copy = browser.http.cookies["modelport_console"]
    tail = httpx.Client(base_url=server.media_url + "/console", cookies={"modelport_console": copy}, timeout=60)
    with tail, tail.stream("GET", "/logs-tail") as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()
        assert next(lines) == "retry: 3000"
        token = csrf_of(browser.get("/keys").text)
        assert browser.http.post("/sign-out", data={"csrf_token": token}).status_code == 303
        # The stream re-checks the session at each poll (2 s): it says so and ends.
        assert "event: signed-out" in list(lines)
    browser.close()
