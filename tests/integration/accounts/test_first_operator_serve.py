"""The first operator's placeholder across starts of a real `modelport serve` on one SQLite data directory
(issue 37): every start prints a setup link while no operator has a password, all of them for one
placeholder row that no list of people shows (admin API, operator console, CLI plain and `--json`, SCIM);
the newest link is the one that works, its page requires the person's email, and once set up the lists
show exactly that person and later starts print no link. On PostgreSQL (two starts on one database): the
link is printed while no operator is set up, and gone once one is."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from modelport.accounts.tables import users
from modelport.accounts.users import FIRST_OPERATOR_EMAIL
from modelport.storage.db import create_engine
from tests.support.accounts import admin, browser, close_browsers, console_path, postgres_url, set_password
from tests.support.console import ConsoleClient, csrf_of
from tests.support.server import RunningServer, run_server

TOKEN = "first-operator-admin-token-0123456789-abc"
SCIM_TOKEN = "first-operator-scim-token-0123456789-abcd"
PERSON = "Root.Operator@Example.com"
GONE = "This link is no longer valid"


@pytest.fixture(autouse=True)
def _close_browsers() -> Iterator[None]:
    yield
    close_browsers()


def _serve(data_dir: Path, **env: str) -> AbstractContextManager[RunningServer]:
    return run_server(
        data_dir,
        env=env,
        MODELPORT_ADMIN_TOKEN=TOKEN,
        MODELPORT_SCIM__TOKEN_ENV="FIRST_OPERATOR_SCIM_TOKEN",
        FIRST_OPERATOR_SCIM_TOKEN=SCIM_TOKEN,
        MODELPORT_ACCOUNTS__SIGN_IN_FAILURES="1000",
        MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE="1000",
    )


def _link(server: RunningServer) -> str | None:
    lines = [line for line in server.banner if line.startswith("first operator:")]
    assert len(lines) <= 1, server.banner
    if not lines:
        return None
    found = re.search(r"(http://\S+/console/setup/\S+)", lines[0])
    assert found is not None, lines[0]
    return found.group(1)


def _rows(server: RunningServer) -> dict[str, int]:
    """The users table's rows by email key, read from the server's database."""
    url = (
        server.env.get("MODELPORT_DATABASE_URL")
        or f"sqlite+aiosqlite:///{server.env['MODELPORT_DATA_DIR']}/modelport.db"
    )

    async def read() -> dict[str, int]:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                stmt = select(users.c.email_key, func.count()).group_by(users.c.email_key)
                return {str(k): int(n) for k, n in (await conn.execute(stmt)).all()}
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _listed(server: RunningServer) -> dict[str, list[str]]:
    """The emails each list of people shows: admin API, operator console page, CLI plain and --json, SCIM."""
    api = admin(server, TOKEN, "GET", "/users")
    assert api.status_code == 200, api.text
    operator = browser(server)
    assert operator.post_form("/admin/sign-in", {"admin_token": TOKEN}).status_code == 303
    page = operator.get("/admin/users")
    assert page.status_code == 200, page.text
    plain = server.cli("admin", "user", "list")
    as_json = server.cli("admin", "user", "list", "--json")
    assert plain.returncode == 0 and as_json.returncode == 0, (plain.stderr, as_json.stderr)
    scim = httpx.get(server.media_url + "/scim/v2/Users", headers={"Authorization": f"Bearer {SCIM_TOKEN}"}, timeout=30)
    assert scim.status_code == 200, scim.text
    email = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
    return {
        "api": [u["email"] for u in api.json()["data"]["users"]],
        "console": sorted(set(email.findall(page.text.split("<main", 1)[-1]))),
        "cli": email.findall(plain.stdout),
        "cli --json": [u["email"] for u in json.loads(as_json.stdout)["users"]],
        "scim": [u["userName"] for u in scim.json()["Resources"]],
        "scim total": [str(scim.json()["totalResults"])],
    }


NOBODY = {"api": [], "console": [], "cli": [], "cli --json": [], "scim": [], "scim total": ["0"]}


def test_the_placeholder_is_one_hidden_row_across_starts_until_someone_sets_it_up(tmp_path: Path) -> None:
    with _serve(tmp_path) as first:
        first_link = _link(first)
        assert first_link is not None
        assert _rows(first) == {FIRST_OPERATOR_EMAIL: 1}
        assert _listed(first) == NOBODY
        assert "(no users)" in first.cli("admin", "user", "list").stdout
    with _serve(tmp_path) as second:
        second_link = _link(second)
        assert second_link is not None and second_link != first_link
        assert _rows(second) == {FIRST_OPERATOR_EMAIL: 1}  # the same placeholder, not a second one
        assert _listed(second) == NOBODY
        # The newer link replaced the older one.
        old = browser(second).get(console_path(first_link))
        assert old.status_code == 410 and GONE in old.text
        # The placeholder never keeps its own email: the setup page requires the person's.
        client = browser(second)
        page = client.get(console_path(second_link))
        assert page.status_code == 200 and 'name="email"' in page.text
        form = {"password": "a long enough passphrase 42", "password_again": "a long enough passphrase 42"}
        refused = client.http.post(console_path(second_link), data={**form, "csrf_token": csrf_of(page.text)})
        assert refused.status_code == 400 and "email is required" in refused.text, refused.text
        assert _listed(second) == NOBODY
        operator: ConsoleClient = set_password(second, second_link, email=PERSON, name="Root")
        assert operator.get("/admin/users").status_code == 200  # signed in to the operator console
        person = PERSON.lower()
        assert _rows(second) == {person: 1}  # the placeholder row became the person's account
        listed = _listed(second)
        assert listed == {
            "api": [PERSON],
            "console": [PERSON],
            "cli": [PERSON],
            "cli --json": [PERSON],
            "scim": [PERSON],
            "scim total": ["1"],
        }, listed
        shown = admin(second, TOKEN, "GET", f"/users/{person}").json()["data"]
        assert shown["operator_role"] == "operator" and shown["name"] == "Root" and shown["status"] == "active"
    with _serve(tmp_path) as third:
        assert _link(third) is None, third.banner  # an operator has a password: no more links
        assert _rows(third) == {PERSON.lower(): 1}
        assert _listed(third)["api"] == [PERSON]


def test_on_postgres_the_link_is_printed_until_an_operator_is_set_up(tmp_path: Path) -> None:
    # Two starts, not the three above: the link is a start's banner, so its end needs a second start.
    with postgres_url() as url:
        with _serve(tmp_path, MODELPORT_DATABASE_URL=url) as first:
            link = _link(first)
            assert link is not None
            assert _rows(first) == {FIRST_OPERATOR_EMAIL: 1}
            assert _listed(first) == NOBODY
            operator = set_password(first, link, email=PERSON, name="Root")
            assert operator.get("/admin/users").status_code == 200
            assert _rows(first) == {PERSON.lower(): 1}
            assert admin(first, TOKEN, "GET", "/users").json()["data"]["users"][0]["email"] == PERSON
            used = browser(first).get(console_path(link))
            assert used.status_code == 410 and GONE in used.text
        with _serve(tmp_path, MODELPORT_DATABASE_URL=url) as second:
            assert _link(second) is None, second.banner
            assert _rows(second) == {PERSON.lower(): 1}
