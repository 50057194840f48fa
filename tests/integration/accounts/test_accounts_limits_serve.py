"""Console accounts' limits and lifetimes through a real `modelport serve --workers 2` sharing Redis, on SQLite
and on PostgreSQL (issue 37): failed sign-ins are limited per account and per address while a correct
credential always gets in (email sign-in and the admin token alike), links expire, invitations are mailed to
a real SMTP server (aiosmtpd), and a removal ends the member's session on every process within a second.
One server per backend."""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Iterator
from email import message_from_bytes
from pathlib import Path

import httpx
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from tests.support.accounts import admin, browser, close_browsers, console_path, server_on, set_password, sign_in
from tests.support.databases import BACKENDS
from tests.support.ports import free_port
from tests.support.server import RunningServer

TOKEN = "accounts-limits-admin-token-0123456789"
REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
FAILURES = 3


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], bytes]] = []
        self.port = 0

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.content or b""
        self.messages.append((list(envelope.rcpt_tos), content if isinstance(content, bytes) else content.encode()))
        return "250 OK"


@pytest.fixture(scope="module")
def inbox() -> Iterator[Inbox]:
    handler = Inbox()
    handler.port = free_port()  # aiosmtpd's controller checks its own port: it needs a real one
    controller = Controller(handler, hostname="127.0.0.1", port=handler.port)
    controller.start()
    try:
        yield handler
    finally:
        controller.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, inbox: Inbox
) -> Iterator[RunningServer]:
    # Each backend's server has its own Redis prefix (fresh sign-in and admin-token counters) and its own
    # mail: the other backend's invitation must not answer this one's test.
    inbox.messages.clear()
    env = {
        "MODELPORT_ADMIN_TOKEN": TOKEN,
        "MODELPORT_REDIS_URL": REDIS_URL,
        "MODELPORT_RATELIMIT_PREFIX": "mp-test-acct-" + secrets.token_hex(4),
        "MODELPORT_ACCOUNTS__SIGN_IN_FAILURES": str(FAILURES),
        "MODELPORT_ACCOUNTS__SIGN_IN_WINDOW_SECONDS": "600",
        "MODELPORT_ACCOUNTS__INVITE_SECONDS": "2",
        "MODELPORT_ACCOUNTS__SETUP_SECONDS": "2",
        "MODELPORT_ADMIN_FAILURES_PER_MINUTE": str(FAILURES),
        "MODELPORT_SMTP__HOST": "127.0.0.1",
        "MODELPORT_SMTP__PORT": str(inbox.port),
        "MODELPORT_SMTP__STARTTLS": "false",
        "MODELPORT_SMTP__FROM": "console@modelport.test",
        "MODELPORT_CONSOLE__KEY_SIGN_IN": "false",
    }
    tmp: Path = tmp_path_factory.mktemp(f"accounts-limits-{request.param}")
    with server_on(request.param, tmp, "--workers", "2", **env) as running:
        yield running
    close_browsers()


def api(server: RunningServer, method: str, path: str, **kwargs: object) -> httpx.Response:
    return admin(server, TOKEN, method, path, **kwargs)


def test_wrong_attempts_are_limited_and_the_right_password_always_gets_in(server: RunningServer) -> None:
    assert api(server, "POST", "/teams", json={"name": "lock-team"}).status_code == 200
    made = api(server, "POST", "/users", json={"email": "locked@example.com", "team": "lock-team", "role": "owner"})
    set_password(server, made.json()["data"]["setup_url"])
    # From an address of its own: the other tests of this module (in any order) fail sign-ins from 127.0.0.1,
    # and the server counts failures per address as well as per account.
    address = "127.0.0.2"
    statuses = []
    for _ in range(FAILURES + 2):
        client = browser(server, local_address=address)
        answer = client.post_form("/sign-in", {"email": "locked@example.com", "password": "wrong password here"})
        statuses.append(answer.status_code)
        if answer.status_code == 429:
            assert int(answer.headers["retry-after"]) >= 1
            assert "That email and password were not accepted." not in answer.text
    assert statuses[:FAILURES] == [401] * FAILURES and statuses[FAILURES:] == [429, 429]
    # The same address trying another account is limited too (per address), yet each right password gets in.
    other = browser(server, local_address=address).post_form(
        "/sign-in", {"email": "someone-else@example.com", "password": "also wrong pw"}
    )
    assert other.status_code == 429
    assert sign_in(server, "locked@example.com", local_address=address).get("/").status_code == 200


def test_a_correct_admin_token_is_never_refused_by_the_limit_on_wrong_ones(server: RunningServer) -> None:
    wrong = [
        httpx.get(server.media_url + "/admin/v1/teams", headers={"Authorization": "Bearer wrong-token"}).status_code
        for _ in range(FAILURES + 2)
    ]
    assert wrong[:FAILURES] == [401] * FAILURES and wrong[-1] == 429
    assert api(server, "GET", "/teams").status_code == 200  # from the same address, right after


def test_setup_and_invitation_links_expire(server: RunningServer) -> None:
    assert api(server, "POST", "/teams", json={"name": "expiry"}).status_code == 200
    setup = api(server, "POST", "/users", json={"email": "late@example.com"}).json()["data"]["setup_url"]
    invite = api(server, "POST", "/teams/expiry/invitations", json={"email": "later@example.com", "role": "viewer"})
    url = invite.json()["data"]["url"]
    time.sleep(2.5)
    for link in (setup, url):
        page = browser(server).get(console_path(link))
        assert page.status_code == 410 and "This link is no longer valid" in page.text


def test_an_invitation_is_mailed_when_smtp_is_set(server: RunningServer, inbox: Inbox) -> None:
    assert api(server, "POST", "/teams", json={"name": "mailing"}).status_code == 200
    made = api(server, "POST", "/teams/mailing/invitations", json={"email": "mailed@example.com", "role": "developer"})
    url = made.json()["data"]["url"]
    deadline = time.monotonic() + 10
    while not any("mailed@example.com" in to for to, _ in inbox.messages) and time.monotonic() < deadline:
        time.sleep(0.1)
    raw = next(raw for to, raw in inbox.messages if "mailed@example.com" in to)
    mail = message_from_bytes(raw)
    assert mail["From"] == "console@modelport.test" and "mailing" in str(mail["Subject"])
    body = mail.get_payload(decode=True)
    assert isinstance(body, bytes) and re.search(r"/console/invite/[A-Za-z0-9_-]{40,}", body.decode())
    assert url.rsplit("/", 1)[1] in body.decode()


def test_a_removal_ends_the_session_on_every_process_within_a_second(server: RunningServer) -> None:
    assert api(server, "POST", "/teams", json={"name": "two-procs"}).status_code == 200
    api(server, "POST", "/users", json={"email": "stay@example.com", "team": "two-procs", "role": "owner"})
    made = api(server, "POST", "/users", json={"email": "go@example.com", "team": "two-procs", "role": "viewer"})
    user = made.json()["data"]
    set_password(server, user["setup_url"])
    cookie = sign_in(server, "go@example.com").http.cookies["modelport_console"]

    def page() -> int:
        # A new connection each time: the two serving processes share the listening socket.
        with httpx.Client(base_url=server.media_url + "/console", cookies={"modelport_console": cookie}) as fresh:
            return fresh.get("/").status_code

    assert [page() for _ in range(6)] == [200] * 6
    assert api(server, "DELETE", f"/teams/two-procs/members/{user['id']}").status_code == 200
    removed_at = time.monotonic()
    answers = [page() for _ in range(10)]
    assert time.monotonic() - removed_at < 1.0 + 10 * 0.5  # the requests themselves, generously
    assert answers == [303] * 10  # the first request after the removal already refused, on either process


def test_key_sign_in_can_be_turned_off(server: RunningServer) -> None:
    assert server.demo_key is not None
    client = browser(server)
    page = client.get("/sign-in")
    assert "api_key" not in page.text  # no key form
    answer = client.post_form("/sign-in", {"api_key": server.demo_key})
    # Refused as a failed email sign-in (429 once this address is past the limit).
    assert answer.status_code in (401, 429) and client.get("/").status_code == 303
