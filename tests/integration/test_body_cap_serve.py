"""Request bodies are counted as they arrive and refused at their cap on every route of both hosts, so a
huge chunked body (no Content-Length) never gets into the server's memory (issue 21 item 2).

Before: the text gateway's protocol entry and `count_tokens` read `request.body()` whole before checking
its size; 400 MiB chunked to `/v1/chat/completions` raised the server's memory by ~770 MiB.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.test_server_limits import connect, read_response
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "body-cap-admin-token-0123456789abcdef"
MiB = 1024 * 1024
HUGE = 400 * MiB
TEXT_ROUTES = ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens"]
MEDIA_ROUTES = [
    "/local/sketch-image",  # task creation
    "/api/v1/media/providers/vendorA/assets",  # asset registration
    "/api/v1/media/files",  # upload (multipart)
    "/admin/v1/teams",  # a FastAPI JSON body
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(tmp_path_factory.mktemp("bodycap"), MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN) as running:
        yield running


def peak_rss_bytes(pid: int) -> int:
    """The process's high-water RSS (VmHWM): the peak, however briefly it was reached."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


# An upload's start: a multipart part holding what begins like a PNG, so the reader keeps reading.
UPLOAD_PREAMBLE = (
    b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n'
    b"Content-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n"
)


def send_chunked(
    url: str, path: str, headers: dict[str, str], total: int, preamble: bytes = b""
) -> tuple[int, dict[str, str], bytes, int]:
    """POST a chunked body of up to `total` bytes; the answer, and how many body bytes were sent before it."""
    sock = connect(url)
    sock.settimeout(60)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()
    )
    sock.sendall(
        head.encode() + b"\r\n" + (f"{len(preamble):x}\r\n".encode() + preamble + b"\r\n" if preamble else b"")
    )
    answered = threading.Event()
    sent = 0
    chunk = b"a" * MiB
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"

    def pump() -> None:
        nonlocal sent
        try:
            while sent < total and not answered.is_set():
                sock.sendall(frame)
                sent += len(chunk)
        except OSError:
            pass  # the server answered and closed: what it did not read was never buffered

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    try:
        status, got, body = read_response(sock)
    finally:
        answered.set()
        sender.join(timeout=60)
        sock.close()
    return status, got, body, sent


def auth(server: RunningServer, path: str) -> dict[str, str]:
    if path.startswith("/admin/"):
        return {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
    kind = "multipart/form-data; boundary=xyz" if path == "/api/v1/media/files" else "application/json"
    return {"Authorization": f"Bearer {server.demo_key}", "Content-Type": kind}


def test_huge_chunked_bodies_are_refused_without_filling_memory(server: RunningServer) -> None:
    pid = server.process.pid
    # Warm up every route (lazy imports, first catalog read) so that the baseline holds what serving needs.
    for url, path in [(server.text_url, p) for p in TEXT_ROUTES] + [(server.media_url, p) for p in MEDIA_ROUTES]:
        httpx.post(url + path, content=b"{}", headers=auth(server, path), timeout=30)
    baseline = peak_rss_bytes(pid)
    for url, path, host in [(server.text_url, p, "text") for p in TEXT_ROUTES] + [
        (server.media_url, p, "media") for p in MEDIA_ROUTES
    ]:
        preamble = UPLOAD_PREAMBLE if path == "/api/v1/media/files" else b""
        status, headers, body, sent = send_chunked(url, path, auth(server, path), HUGE, preamble)
        assert status == 413, (path, status, body)
        assert headers.get("connection") == "close", (path, headers)
        error = json.loads(body)
        if host == "text":
            assert error["error"]["type"] in ("invalid_request_error", "request_too_large"), (path, error)
        else:
            assert error["code"] == 413, (path, error)
        assert sent < HUGE, (path, sent)  # refused at the cap, not after the whole body
    grown = peak_rss_bytes(pid) - baseline
    # The largest cap is the text gateway's 64 MiB; before, one 400 MiB body alone added ~770 MiB.
    assert grown < 200 * MiB, f"peak RSS grew by {grown // MiB} MiB"
    # Both hosts still serve.
    assert httpx.get(server.text_url + "/healthz", timeout=10).status_code == 200
    assert httpx.get(server.media_url + "/healthz", timeout=10).status_code == 200


@pytest.mark.parametrize(
    ("host", "path", "body", "expected"),
    [
        # 3 MiB of JSON, chunked: read whole and answered for what it says (an unknown model), not 413.
        (
            "text",
            "/v1/chat/completions",
            {"model": "nope/x", "messages": [{"role": "user", "content": "x" * 3 * MiB}]},
            404,
        ),
        # 900 KiB under the media host's 1 MiB default: the field check answers.
        ("media", "/admin/v1/teams", {"name": "t", "pad": "x" * 900 * 1024}, 400),
    ],
)
def test_a_chunked_body_under_the_cap_is_served(
    server: RunningServer, host: str, path: str, body: dict[str, object], expected: int
) -> None:
    url = server.text_url if host == "text" else server.media_url
    payload = json.dumps(body).encode()
    sock = connect(url)
    sock.settimeout(60)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in auth(server, path).items()
    )
    frames = b"".join(
        f"{len(part):x}\r\n".encode() + part + b"\r\n"
        for part in (payload[i : i + 64 * 1024] for i in range(0, len(payload), 64 * 1024))
    )
    with sock:
        sock.sendall(head.encode() + b"\r\n" + frames + b"0\r\n\r\n")
        status, _, answer = read_response(sock)
    assert status == expected, answer[:300]
