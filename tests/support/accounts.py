"""People in tests: a running server's admin API for users, members and invitations, and console clients
signed in as a person (email and password, the second factor when asked)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pyotp

from tests.support.console import ConsoleClient, csrf_of
from tests.support.databases import migrated_postgres_database
from tests.support.server import RunningServer, run_server

PASSWORD = "a long enough passphrase 42"
_OPEN: list[ConsoleClient] = []


def browser(server: RunningServer, *, local_address: str | None = None) -> ConsoleClient:
    """A new console client (its own cookies; `local_address`: the loopback address it connects from),
    closed by `close_browsers`."""
    client = ConsoleClient(server.media_url, local_address=local_address)
    _OPEN.append(client)
    return client


def close_browsers() -> None:
    while _OPEN:
        _OPEN.pop().close()


def admin(server: RunningServer, token: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.request(method, server.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kwargs)


def console_path(url: str) -> str:
    """`/setup/...` of a full `{media}/console/setup/...` link."""
    return url[url.index("/console/") + len("/console") :]


def set_password(server: RunningServer, link: str, password: str = PASSWORD, **extra: str) -> ConsoleClient:
    """Open a setup, reset or invitation link in a new browser-like client, set the password: signed in."""
    client = browser(server)
    path = console_path(link)
    page = client.get(path)
    assert page.status_code == 200, page.text
    answer = client.http.post(
        path, data={"password": password, "password_again": password, "csrf_token": csrf_of(page.text), **extra}
    )
    assert answer.status_code == 303, answer.text
    return client


def sign_in(
    server: RunningServer,
    email: str,
    password: str = PASSWORD,
    *,
    totp_secret: str | None = None,
    local_address: str | None = None,
) -> ConsoleClient:
    client = browser(server, local_address=local_address)
    answer = client.post_form("/sign-in", {"email": email, "password": password})
    assert answer.status_code == 303, answer.text
    if answer.headers["location"].endswith("/sign-in/code") or "/sign-in/code" in answer.headers["location"]:
        assert totp_secret is not None
        coded = client.post_form("/sign-in/code", {"code": pyotp.TOTP(totp_secret).now()})
        assert coded.status_code == 303, coded.text
    return client


@contextmanager
def postgres_url() -> Iterator[str]:
    """A fresh migrated PostgreSQL database's URL for sync tests (each `serve` on it shares it), dropped after."""
    loop = asyncio.new_event_loop()
    with ExitStack() as stack:
        stack.callback(loop.close)
        database = migrated_postgres_database()
        url = loop.run_until_complete(database.__aenter__())
        stack.callback(lambda: loop.run_until_complete(database.__aexit__(None, None, None)))
        yield url


@contextmanager
def server_on(backend: str, tmp: Path, *args: str, **env: str) -> Iterator[RunningServer]:
    """A `modelport serve` on SQLite (its data directory's file) or on a fresh migrated PostgreSQL database."""
    with ExitStack() as stack:
        if backend == "postgres":
            env["MODELPORT_DATABASE_URL"] = stack.enter_context(postgres_url())
        yield stack.enter_context(run_server(tmp, *args, env=env))
