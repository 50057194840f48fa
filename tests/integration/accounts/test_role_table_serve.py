"""The role table of docs/api/accounts.md, walked through a real `modelport serve` (issue 37): every console
page or form and every team API call, for each role, answers as the table says: `no` is the one 403
(`Forbidden: your role in this team does not allow this`), `yes` is anything but a refusal. A console or
team API route missing from the table fails here, so the table cannot fall behind the code. On SQLite and on
PostgreSQL, one server per backend."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.routing import APIRoute

from modelport.console.app import console_routers
from modelport.team_admin import audit, cache, keys, members, notifications
from tests.support.accounts import admin, close_browsers, server_on, set_password
from tests.support.console import ConsoleClient, csrf_of
from tests.support.databases import BACKENDS
from tests.support.server import RunningServer

TOKEN = "role-table-admin-token-0123456789-abc"
DOC = Path(__file__).resolve().parents[3] / "docs" / "api" / "accounts.md"
ROLES = ("owner", "admin", "developer", "viewer")
REFUSAL = "your role in this team does not allow this"
# Routes without a session, or any signed-in person's own (docs/api/accounts.md lists them under the table).
OUTSIDE_THE_TABLE = re.compile(r"^/(sign-in|sign-out|oidc/|admin/|setup/|reset/|invite/|switch-team|profile/)")
FORM = {"name": "walked", "period": "month", "role": "viewer", "url": "", "rpm": "1"}
_ROW = re.compile(r"^\| (console|team API) \| `(\w+) ([^`]+)` \| (.+) \|$")


def table() -> dict[tuple[str, str, str], dict[str, str]]:
    rows = {}
    for line in DOC.read_text("utf-8").splitlines():
        found = _ROW.match(line)
        if found:
            door, method, path, cells = found.groups()
            rows[(door, method, path)] = dict(zip(ROLES, (c.strip() for c in cells.split("|")), strict=True))
    return rows


def routes() -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for door, routers in (
        ("console", console_routers()),
        ("team API", (keys.router, audit.team_router, notifications.router, members.router, cache.router)),
    ):
        for router in routers:
            for route in router.routes:
                if isinstance(route, APIRoute) and not OUTSIDE_THE_TABLE.match(route.path):
                    found.update((door, m, route.path) for m in route.methods or () if m != "HEAD")
    return found


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "MODELPORT_ADMIN_TOKEN": TOKEN,
        "MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE": "1000",
        "MODELPORT_ACCOUNTS__SIGN_IN_FAILURES": "1000",
    }
    with server_on(request.param, tmp_path_factory.mktemp(f"role-table-{request.param}"), **env) as running:
        yield running
    close_browsers()


def call_console(client: ConsoleClient, method: str, path: str, token: str) -> httpx.Response:
    if path == "/logs-tail":  # a live stream: its status is what the walk needs
        with client.http.stream(method, path, timeout=30) as streamed:
            return httpx.Response(streamed.status_code)
    if method == "GET":
        return client.get(path)
    return client.http.request(method, path, data={**FORM, "csrf_token": token})


def refused(answer: httpx.Response) -> bool:
    return answer.status_code == 403 and REFUSAL in html.unescape(answer.text)


def test_the_table_names_every_route() -> None:
    assert set(table()) == routes(), (sorted(routes() - set(table())), sorted(set(table()) - routes()))


def test_every_row_answers_as_the_table_says_for_each_role(server: RunningServer) -> None:
    assert admin(server, TOKEN, "POST", "/teams", json={"name": "walk"}).status_code == 200
    sessions = {}
    for role in ROLES:
        made = admin(
            server, TOKEN, "POST", "/users", json={"email": f"{role}@walk.example", "team": "walk", "role": role}
        )
        sessions[role] = set_password(server, made.json()["data"]["setup_url"])
    key_of = {
        role: admin(server, TOKEN, "POST", "/teams/walk/keys", json={"role": key_role}).json()["data"]["key"]
        for role, key_role in (("admin", "admin"), ("developer", "member"))
    }
    wrong = []
    for (door, method, pattern), expected in sorted(table().items()):
        path = re.sub(r"\{[^}]+\}", "none", pattern)
        for role in ROLES:
            if expected[role] == "-":
                continue
            if door == "console":
                client = sessions[role]
                answer = call_console(client, method, path, csrf_of(client.get("/").text))
            else:
                headers = {"Authorization": f"Bearer {key_of[role]}"}
                body: dict[str, str] | None = {} if method in ("POST", "PUT", "PATCH") else None
                answer = httpx.request(method, server.media_url + path, json=body, headers=headers, timeout=30)
            ok = refused(answer) if expected[role] == "no" else answer.status_code < 500 and not refused(answer)
            ok = (ok and answer.status_code not in (401, 303)) or (
                expected[role] == "yes" and answer.status_code == 303
            )
            if not ok:
                wrong.append(f"{role} {method} {pattern}: {answer.status_code}")
    assert not wrong, wrong
    # The sessions were never ended by the walk: each still opens its overview.
    assert all(client.get("/").status_code == 200 for client in sessions.values())
