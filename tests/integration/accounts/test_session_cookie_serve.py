"""The console's session cookie through a real `modelport serve` (issue 37): a person signs in with email
and password, and the `Set-Cookie` of the sign-in, of a later page (the cookie is re-signed on every
response) and of the sign-out carry `HttpOnly`, `SameSite=Lax`, `Path=/console`, `Max-Age` of the idle
timeout, and `Secure` exactly when the console is served over HTTPS: the public media URL is https, unless
`MODELPORT_CONSOLE__SECURE_COOKIE` says otherwise (docs/api/accounts.md).

The servers listen on plain http on loopback; the test sends the cookie back itself (an HTTP client, like a
browser, does not send a `Secure` cookie over http), so the same steps run in every configuration."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.accounts import PASSWORD, admin, close_browsers, console_path, sign_in
from tests.support.console import csrf_of
from tests.support.server import RunningServer, run_server

TOKEN = "cookie-admin-token-0123456789-abcdefgh"
COOKIE = "modelport_console"
IDLE = 3600
PUBLIC_HTTPS = "https://console.modelport.test"


@dataclass(frozen=True)
class Config:
    name: str
    env: dict[str, str]
    secure: bool


CONFIGS = [
    Config("local-http", {}, secure=False),  # the default: the public URL is the http listener
    Config("public-https", {"MODELPORT_PUBLIC_MEDIA_URL": PUBLIC_HTTPS}, secure=True),
    Config("http-forced-secure", {"MODELPORT_CONSOLE__SECURE_COOKIE": "true"}, secure=True),
    Config(
        "https-secure-off",
        {"MODELPORT_PUBLIC_MEDIA_URL": PUBLIC_HTTPS, "MODELPORT_CONSOLE__SECURE_COOKIE": "false"},
        secure=False,
    ),
]


@pytest.fixture(autouse=True)
def _close_browsers() -> Iterator[None]:
    yield
    close_browsers()


@dataclass
class SetCookie:
    name: str
    value: str
    attributes: dict[str, str]  # lower-cased names; a flag's value is ""


def _set_cookie(answer: httpx.Response) -> SetCookie:
    """The answer's one console session `Set-Cookie`, parsed."""
    headers = [h for h in answer.headers.get_list("set-cookie") if h.startswith(COOKIE + "=")]
    assert len(headers) == 1, answer.headers.get_list("set-cookie")
    first, *rest = (part.strip() for part in headers[0].split(";"))
    name, _, value = first.partition("=")
    attributes = {}
    for part in rest:
        key, _, val = part.partition("=")
        assert key.lower() not in attributes, headers[0]
        attributes[key.lower()] = val
    return SetCookie(name, value, attributes)


def _check(cookie: SetCookie, config: Config, *, cleared: bool = False) -> None:
    expected = {"path": "/console", "httponly": "", "samesite": "lax"}
    if cleared:
        expected["expires"] = "Thu, 01 Jan 1970 00:00:00 GMT"
    else:
        expected["max-age"] = str(IDLE)
    if config.secure:
        expected["secure"] = ""
    assert cookie.name == COOKIE
    assert cookie.attributes == expected, (config.name, cookie.attributes)


class Browser:
    """A console client that keeps the session cookie itself and sends it back on every request, whatever
    its attributes (so it works the same against an http listener whose public URL is https)."""

    def __init__(self, server: RunningServer) -> None:
        self.base = server.media_url + "/console"
        self.cookie: str | None = None

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        headers = {} if self.cookie is None else {"Cookie": f"{COOKIE}={self.cookie}"}
        answer = httpx.request(method, self.base + path, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]
        for header in answer.headers.get_list("set-cookie"):
            if header.startswith(COOKIE + "="):
                value = _set_cookie(answer).value
                self.cookie = None if value == "null" else value
        return answer

    def post_form(self, path: str, data: dict[str, str]) -> httpx.Response:
        page = self.request("GET", path)
        assert page.status_code == 200, page.text
        return self.request("POST", path, data={**data, "csrf_token": csrf_of(page.text)})


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_the_session_cookie_is_secure_exactly_when_the_console_is_served_over_https(
    config: Config, tmp_path: Path
) -> None:
    env = {
        "MODELPORT_ADMIN_TOKEN": TOKEN,
        "MODELPORT_CONSOLE__SESSION_IDLE_SECONDS": str(IDLE),
        "MODELPORT_ACCOUNTS__SIGN_IN_FAILURES": "1000",
        **config.env,
    }
    with run_server(tmp_path, env=env) as server:
        assert admin(server, TOKEN, "POST", "/teams", json={"name": "cookies"}).status_code == 200
        made = admin(
            server, TOKEN, "POST", "/users", json={"email": "cookie@example.com", "team": "cookies", "role": "owner"}
        )
        assert made.status_code == 200, made.text
        setup_url = made.json()["data"]["setup_url"]
        public = config.env.get("MODELPORT_PUBLIC_MEDIA_URL", server.media_url)
        assert setup_url.startswith(public + "/console/setup/")

        first = Browser(server)
        form = {"password": PASSWORD, "password_again": PASSWORD}
        set_up = first.post_form(console_path(setup_url), form)
        assert set_up.status_code == 303, set_up.text
        _check(_set_cookie(set_up), config)

        person = Browser(server)
        signed_in = person.post_form("/sign-in", {"email": "cookie@example.com", "password": PASSWORD})
        assert signed_in.status_code == 303 and signed_in.headers["location"].endswith("/console/"), signed_in.text
        _check(_set_cookie(signed_in), config)
        session = person.cookie
        home = person.request("GET", "/")
        assert home.status_code == 200 and "cookies" in home.text, home.text  # the cookie is a live session
        _check(_set_cookie(home), config)  # re-signed on every response, with the same attributes

        out = person.request("GET", "/")
        signed_out = person.request("POST", "/sign-out", data={"csrf_token": csrf_of(out.text)})
        assert signed_out.status_code == 303, signed_out.text
        _check(_set_cookie(signed_out), config, cleared=True)
        person.cookie = session  # a copy of the old cookie no longer signs in
        assert person.request("GET", "/").status_code == 303

        if not config.secure:
            # On plain http (local use) an ordinary client's cookie jar carries the session.
            client = sign_in(server, "cookie@example.com")
            assert client.get("/").status_code == 200
            assert re.search(r"cookie@example\.com", client.get("/profile").text)


def test_each_response_renews_the_cookie_so_only_an_idle_session_ends(tmp_path: Path) -> None:
    """`SESSION_IDLE_SECONDS` counts from the last request: a person active for longer than it stays signed
    in; the cookie of one idle for longer is refused by the server (its signed time is too old), even sent
    by a client that ignores `Max-Age`."""
    idle = 8  # a page answered within 8 s even on a loaded machine
    env = {"MODELPORT_ADMIN_TOKEN": TOKEN, "MODELPORT_CONSOLE__SESSION_IDLE_SECONDS": str(idle)}
    with run_server(tmp_path, env=env) as server:
        assert admin(server, TOKEN, "POST", "/teams", json={"name": "renewals"}).status_code == 200
        body = {"email": "active@example.com", "team": "renewals", "role": "owner"}
        made = admin(server, TOKEN, "POST", "/users", json=body)
        assert made.status_code == 200, made.text
        form = {"password": PASSWORD, "password_again": PASSWORD}
        assert Browser(server).post_form(console_path(made.json()["data"]["setup_url"]), form).status_code == 303
        person = Browser(server)
        signed_in = person.post_form("/sign-in", {"email": "active@example.com", "password": PASSWORD})
        assert signed_in.status_code == 303, signed_in.text
        started = time.monotonic()
        pages = 0
        while time.monotonic() - started < 2 * idle:  # active well past the idle timeout
            page = person.request("GET", "/")
            assert page.status_code == 200, (round(time.monotonic() - started, 1), page.headers.get("location"))
            pages += 1
            time.sleep(0.5)
        assert pages >= 5
        time.sleep(idle + 3)  # idle past the timeout (the signed time has whole seconds)
        ended = person.request("GET", "/")
        assert ended.status_code == 303 and "/sign-in" in ended.headers["location"]
