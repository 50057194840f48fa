"""The console's and the admin API's door against strangers (issue 21, items 3, 9 and 10), through a real
`modelport serve`.

- Console forms are application/x-www-form-urlencoded only, capped (4 KiB for sign-in), refused before
  the body is read: the answer comes while the client is still sending, nothing is parsed or spooled.
- Failed team sign-ins are limited per client address and per key prefix tried; a correct key is never
  refused. Failed admin-token attempts are limited per address (the admin API and the operator sign-in
  share the count); the right admin token is never refused.
- `X-Forwarded-For` is honoured only from `server.trusted_proxies`: from anywhere else it changes nothing.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.console import ConsoleClient, csrf_of
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "door-limits-admin-token-0123456789abcdef"
LIMIT = 3


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """Behind a proxy on loopback: each X-Forwarded-For address is a client of its own."""
    with run_server(
        tmp_path_factory.mktemp("door-proxied"),
        MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
        MODELPORT_SERVER__TRUSTED_PROXIES="127.0.0.1, ::1",
        MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE=str(LIMIT),
        MODELPORT_ADMIN_FAILURES_PER_MINUTE=str(LIMIT),
    ) as running:
        yield running


def sign_in(server: RunningServer, key: str, address: str) -> httpx.Response:
    """A team sign-in from `address` (as the trusted proxy reports it), with its own session."""
    headers = {"X-Forwarded-For": address}
    with httpx.Client(base_url=server.media_url + "/console", timeout=30, headers=headers) as client:
        token = csrf_of(client.get("/sign-in").text)
        return client.post("/sign-in", data={"api_key": key, "csrf_token": token})


def raw_exchange(server: RunningServer, head: str, body: bytes = b"", *, timeout: float = 30) -> str:
    """Send a request head (and the start of a body) on a plain socket without finishing the body; return
    what the server answers meanwhile (its status line and headers)."""
    url = urlsplit(server.media_url)
    with socket.create_connection((url.hostname, url.port), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + body)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    return received.decode("latin-1")


def session_cookie_and_token(server: RunningServer) -> tuple[str, str]:
    with httpx.Client(base_url=server.media_url + "/console", timeout=30) as client:
        token = csrf_of(client.get("/sign-in").text)
        return client.cookies["modelport_console"], token


def test_a_huge_multipart_sign_in_is_refused_before_its_body_is_read(proxied: RunningServer) -> None:
    cookie, _ = session_cookie_and_token(proxied)
    head = (
        "POST /console/sign-in HTTP/1.1\r\nHost: x\r\n"
        f"Cookie: modelport_console={cookie}\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 419430400\r\n\r\n"
    )
    # 400 MiB announced, 64 KiB sent: the answer comes without waiting for the rest.
    answer = raw_exchange(proxied, head, b"--b\r\n" + b"x" * 65536)
    assert answer.startswith("HTTP/1.1 415"), answer[:200]
    assert "content-type: text/html" in answer.lower()


def test_form_bodies_over_the_cap_are_refused_as_they_arrive(proxied: RunningServer) -> None:
    cookie, token = session_cookie_and_token(proxied)
    common = f"Host: x\r\nCookie: modelport_console={cookie}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    announced = raw_exchange(proxied, f"POST /console/sign-in HTTP/1.1\r\n{common}Content-Length: 188743680\r\n\r\n")
    assert announced.startswith("HTTP/1.1 413"), announced[:200]
    # Chunked (no length): counted as it arrives, refused past 4 KiB though the body never ends.
    chunk = b"a=" + b"x" * 8190
    chunked = raw_exchange(
        proxied,
        f"POST /console/sign-in HTTP/1.1\r\n{common}Transfer-Encoding: chunked\r\n\r\n",
        f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n",
    )
    assert chunked.startswith("HTTP/1.1 413"), chunked[:200]
    # 200 fields of 1 MB (the probe that held 180 MiB): refused at the cap, here through httpx.
    with httpx.Client(base_url=proxied.media_url + "/console", timeout=60) as client:
        token = csrf_of(client.get("/sign-in").text)
        many = client.post("/sign-in", data={"csrf_token": token, **{f"f{i}": "x" * 1_000_000 for i in range(20)}})
        assert many.status_code == 413 and "larger than 4096 bytes" in many.text
        # Other forms have their own, larger cap; a JSON body is not a form.
        as_json = client.post("/sign-in", json={"api_key": "mp-x", "csrf_token": token})
        assert as_json.status_code == 415 and as_json.headers["content-type"].startswith("text/html")
        # The connection-level answer left the service usable.
        assert client.get("/sign-in").status_code == 200


def test_a_correct_key_is_never_locked_out_and_failures_count_per_address(proxied: RunningServer) -> None:
    demo = proxied.demo_key
    assert demo is not None
    for _ in range(LIMIT):
        assert sign_in(proxied, "mp-wrong-from-a", "198.51.100.1").status_code == 401
    locked = sign_in(proxied, "mp-wrong-from-a", "198.51.100.1")
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1
    assert sign_in(proxied, demo, "198.51.100.1").status_code == 303  # the right key, same address
    # Behind the proxy, another client is not locked out by the first one's failures.
    assert sign_in(proxied, "mp-zz-other-prefix", "198.51.100.2").status_code == 401


def test_failures_also_count_per_key_prefix_across_addresses(proxied: RunningServer) -> None:
    demo = proxied.demo_key
    assert demo is not None
    spray = demo[:10] + "x" * 20  # the victim's visible prefix, guessed from many addresses
    for n in range(LIMIT):
        assert sign_in(proxied, spray, f"203.0.113.{n + 1}").status_code == 401
    locked = sign_in(proxied, spray, "203.0.113.99")  # a fresh address: the prefix is what is limited
    assert locked.status_code == 429 and "too many failed sign-in attempts" in locked.text
    assert sign_in(proxied, demo, "203.0.113.99").status_code == 303  # the key itself still signs in


def test_failed_admin_tokens_are_limited_per_address_and_the_right_token_still_works(proxied: RunningServer) -> None:
    """Issue 33 item 4: wrong tokens from an address used to lock the right one out of that address too."""

    def admin_call(token: str, address: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}", "X-Forwarded-For": address}
        return httpx.get(proxied.media_url + "/admin/v1/teams", headers=headers, timeout=30)

    assert admin_call(ADMIN_TOKEN, "192.0.2.1").status_code == 200  # successes are not counted
    for _ in range(LIMIT):
        assert admin_call("wrong-token", "192.0.2.1").status_code == 401
    refused = admin_call("wrong-token", "192.0.2.1")  # past the limit: wrong tokens are 429
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.json() == {"code": 429, "message": refused.json()["message"]}
    assert "too many failed admin token attempts" in refused.json()["message"]
    assert admin_call(ADMIN_TOKEN, "192.0.2.1").status_code == 200  # the right token, same address
    # The operator sign-in shares the count of that address: a wrong token is limited, the right one signs in.
    with httpx.Client(base_url=proxied.media_url + "/console", headers={"X-Forwarded-For": "192.0.2.1"}) as client:
        token = csrf_of(client.get("/admin/sign-in").text)
        page = client.post("/admin/sign-in", data={"admin_token": "wrong-token", "csrf_token": token})
        assert page.status_code == 429 and "too many failed admin token attempts" in page.text
        page = client.post("/admin/sign-in", data={"admin_token": ADMIN_TOKEN, "csrf_token": token})
        assert page.status_code == 303
    # Another address is not limited by the first one's failures.
    assert admin_call("wrong-token", "192.0.2.2").status_code == 401
    assert admin_call(ADMIN_TOKEN, "192.0.2.2").status_code == 200


def test_forwarded_headers_are_ignored_without_trusted_proxies(tmp_path: Path) -> None:
    """The default: no proxy is trusted, so varying X-Forwarded-For from loopback is one client still."""
    with run_server(tmp_path, MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE=str(LIMIT)) as server:
        for n in range(LIMIT):
            assert sign_in(server, f"mp-{n}-wrong", f"198.51.100.{n + 1}").status_code == 401
        assert sign_in(server, "mp-9-wrong", "198.51.100.200").status_code == 429
        client = ConsoleClient(server.media_url)
        assert server.demo_key is not None and client.sign_in(server.demo_key).status_code == 303
        client.close()
