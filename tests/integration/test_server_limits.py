"""Header size, timeouts and connection caps of a real `modelport serve`, over raw sockets (issue 9 items 2, 3)."""

from __future__ import annotations

import json
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import RunningServer, run_server

HEADER_TIMEOUT = 1.5
BODY_TIMEOUT = 1.5
MAX_HEADER_BYTES = 16 * 1024
HARD_FILES = 1024
KEEP_ALIVE = 1


def _low_file_limit() -> None:
    # The measured failure: a 1,024 soft limit. The hard limit is raised to by the server itself.
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, HARD_FILES))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(
        tmp_path_factory.mktemp("limits"),
        preexec_fn=_low_file_limit,
        MODELPORT_SERVER__HEADER_TIMEOUT_SECONDS=str(HEADER_TIMEOUT),
        MODELPORT_SERVER__BODY_TIMEOUT_SECONDS=str(BODY_TIMEOUT),
        MODELPORT_SERVER__MAX_HEADER_BYTES=str(MAX_HEADER_BYTES),
        MODELPORT_SERVER__KEEP_ALIVE_SECONDS=str(KEEP_ALIVE),
    ) as running:
        yield running


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def connect(url: str) -> socket.socket:
    sock = socket.create_connection(address(url), timeout=10)
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read one response (until the server closes or Content-Length is satisfied)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    if not data:
        return 0, {}, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def both(server: RunningServer) -> list[tuple[str, str]]:
    return [("media", server.media_url), ("text", server.text_url)]


def reachable(server: RunningServer) -> None:
    for _, url in both(server):
        started = time.monotonic()
        r = httpx.get(url + "/", timeout=5)
        assert r.status_code == 200 and time.monotonic() - started < 2


# -- item 2: request line and headers ----------------------------------------------------------------


@pytest.mark.parametrize("host", ["media", "text"])
def test_headers_over_the_cap_are_431_in_the_host_shape(server: RunningServer, host: str) -> None:
    url = server.media_url if host == "media" else server.text_url
    with connect(url) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES + 100) + b"\r\n\r\n")
        status, headers, body = read_response(sock)
    assert status == 431 and headers["connection"] == "close"
    parsed = json.loads(body)
    if host == "media":
        assert parsed["code"] == 431 and parsed["message"].startswith("Request header fields too large")
    else:
        assert parsed["error"]["type"] == "invalid_request_error"
        assert str(MAX_HEADER_BYTES) in parsed["error"]["message"]


def test_many_headers_and_a_long_url_count_too(server: RunningServer) -> None:
    many = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(200))
    with connect(server.text_url) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
        assert read_response(sock)[0] == 431
    with connect(server.media_url) as sock:
        sock.sendall(b"GET /" + b"a" * (MAX_HEADER_BYTES + 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock)[0] == 431


def test_a_pipelined_request_over_the_cap_in_the_same_read_is_431(server: RunningServer) -> None:
    """The second request's head arrives whole in the read that carries the first (the count of what
    arrived restarts between requests): it is still measured and refused."""
    first = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    second = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES + 100) + b"\r\n\r\n"
    with connect(server.text_url) as sock:
        sock.sendall(first + second)
        # uvicorn refuses the second head as it parses it, before the first request's answer is written.
        assert read_response(sock)[0] == 431


def test_headers_under_the_cap_are_served(server: RunningServer) -> None:
    with connect(server.text_url) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES - 1024) + b"\r\n\r\n")
        assert read_response(sock)[0] == 200


def test_an_endless_header_is_cut_early_and_the_other_host_stays_reachable(server: RunningServer) -> None:
    """64 MB of header would be buffered whole by the parser: the server must stop reading long before."""
    socks = []
    try:
        for _ in range(4):
            sock = connect(server.text_url)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ")
            socks.append(sock)
        sent = 0
        status = 0
        for sock in socks:
            try:
                for _ in range(1024):  # up to 64 MB
                    sock.sendall(b"a" * 65536)
                    sent += 65536
            except OSError:
                pass  # the server closed the connection after answering 431
            status = read_response(sock)[0]
            assert status == 431
        assert sent < 4 * 16 * 1024 * 1024
        reachable(server)
    finally:
        for sock in socks:
            sock.close()


# -- item 3: timeouts and connection caps ------------------------------------------------------------


def test_an_idle_connection_is_closed_after_the_header_timeout(server: RunningServer) -> None:
    with connect(server.media_url) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""
        assert HEADER_TIMEOUT * 0.8 < time.monotonic() - started < HEADER_TIMEOUT + 3


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(server: RunningServer) -> None:
    with connect(server.text_url) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock)[0] == 200
        started = time.monotonic()
        assert sock.recv(1) == b""
        assert KEEP_ALIVE * 0.8 < time.monotonic() - started < KEEP_ALIVE + 2


def test_slow_headers_get_408(server: RunningServer) -> None:
    with connect(server.text_url) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        status, _, body = read_response(sock)
        assert status == 408 and time.monotonic() - started < HEADER_TIMEOUT + 3
        assert "headers did not arrive" in json.loads(body)["error"]["message"]


def test_a_stalled_body_gets_408(server: RunningServer) -> None:
    with connect(server.text_url) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + (server.demo_key or "").encode()
            + b'\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"model":'
        )
        started = time.monotonic()
        status, _, body = read_response(sock)
        assert status == 408 and time.monotonic() - started < BODY_TIMEOUT + 3
        assert "body paused" in json.loads(body)["error"]["message"]


def test_the_open_file_limit_is_raised_to_the_hard_limit(server: RunningServer) -> None:
    limits = Path(f"/proc/{server.process.pid}/limits").read_text()
    line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    assert soft == hard == str(HARD_FILES)


def test_1100_idle_sockets_leave_both_hosts_reachable(server: RunningServer) -> None:
    socks: list[socket.socket] = []
    try:
        for i in range(1100):
            _, url = both(server)[i % 2]
            socks.append(socket.create_connection(address(url), timeout=10))
        time.sleep(0.3)
        reachable(server)
    finally:
        for sock in socks:
            sock.close()


def test_over_the_cap_with_every_connection_busy_is_503(tmp_path: Path) -> None:
    with run_server(tmp_path, MODELPORT_SERVER__MAX_CONNECTIONS="3") as running:
        busy = []
        try:
            for _ in range(3):
                sock = connect(running.text_url)
                # Headers done, body pending: a request in flight.
                sock.sendall(
                    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Authorization: Bearer " + (running.demo_key or "").encode() + b"\r\n"
                    b"Content-Length: 100\r\n\r\n{"
                )
                busy.append(sock)
            time.sleep(0.3)
            with connect(running.media_url) as extra:
                extra.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                status, headers, body = read_response(extra)
            assert status == 503 and headers["retry-after"] == "1"
            assert json.loads(body)["message"].startswith("Service unavailable")
        finally:
            for sock in busy:
                sock.close()
        time.sleep(0.3)
        reachable(running)
