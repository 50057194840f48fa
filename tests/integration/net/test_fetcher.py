"""The SSRF-safe fetcher against a real local HTTPS origin with a test CA."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme

from modelport.net import FetchError, SafeFetcher, UrlRefused
from modelport.settings import NetSettings
from tests.support.https_origin import HttpsOrigin


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("origin"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def fetcher(origin: HttpsOrigin, tmp_path: Path) -> AsyncIterator[SafeFetcher]:
    settings = NetSettings(allow_hosts=f"localhost:{origin.port}", ca_bundle=origin.ca_file)
    f = SafeFetcher(settings, temp_dir=tmp_path / "tmp")
    yield f
    await f.aclose()


async def test_fetches_to_a_file_with_host_and_sni_kept(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    url = origin.serve("a.bin", b"hello" * 1000, "image/png")
    with await fetcher.fetch_to_file(url, max_bytes=5000) as got:
        assert got.path.read_bytes() == b"hello" * 1000
        assert got.size_bytes == 5000 and got.content_type == "image/png" and not got.own
    assert not got.path.exists()
    assert origin.requests[-1].headers["Host"] == f"localhost:{origin.port}"


async def test_without_the_ca_bundle_tls_is_not_trusted(origin: HttpsOrigin, tmp_path: Path) -> None:
    f = SafeFetcher(NetSettings(allow_hosts=f"localhost:{origin.port}"), temp_dir=tmp_path)
    try:
        with pytest.raises(FetchError) as info:
            await f.fetch_to_file(origin.serve("b.bin", b"x"), max_bytes=10)
        assert info.value.kind == "origin_error" and "TLS certificate" in info.value.detail
    finally:
        await f.aclose()


SPELLINGS = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0x7f.1",
    "0177.0.0.1",
    "017700000001",
    "[::ffff:127.0.0.1]",
    "[::1]",
    "[::127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::]",
    "0.0.0.0",
    "0",
    "127.0.0.1.",
    "２１３０７０６４３３",
]


async def test_forbidden_spellings_never_connect(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    before = origin.connections
    for host in SPELLINGS:
        for scheme in ("https", "http"):
            with pytest.raises(UrlRefused) as info:
                await fetcher.fetch_to_file(f"{scheme}://{host}:{origin.port}/f/a.bin", max_bytes=10)
            assert info.value.status == 400, host
    # localhost is allowed only on its own port: any other port is checked, and localhost is loopback.
    with pytest.raises(UrlRefused) as refused:
        await fetcher.fetch_to_file(f"https://localhost:{origin.port + 1}/", max_bytes=10)
    assert refused.value.kind == "forbidden_address"
    assert origin.connections == before


async def test_redirects_are_rechecked(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    target = origin.serve("r.bin", b"redirected")
    with await fetcher.fetch_to_file(f"{origin.base}/redirect?to={target}", max_bytes=100) as got:
        assert got.path.read_bytes() == b"redirected" and got.final_url == target
    # Three hops are fine, the fourth is one too many.
    with await fetcher.fetch_to_file(f"{origin.base}/redirect?n=3&to={target}", max_bytes=100) as got:
        assert got.path.read_bytes() == b"redirected"
    with pytest.raises(FetchError) as info:
        await fetcher.fetch_to_file(f"{origin.base}/redirect?n=4&to={target}", max_bytes=100)
    assert info.value.kind == "too_many_redirects"
    # A redirect to the same server by a forbidden spelling: refused before connecting again.
    before = origin.connections
    forbidden = f"https://127.0.0.1:{origin.port}/f/r.bin"
    with pytest.raises(UrlRefused) as refused:
        await fetcher.fetch_to_file(f"{origin.base}/redirect?to={forbidden}", max_bytes=100)
    assert refused.value.kind == "forbidden_address"
    assert refused.value.detail == "url redirected: points to a loopback address, which the server does not fetch"
    assert origin.seen_paths()[-1].startswith("/redirect")
    assert origin.connections - before <= 1  # the redirecting request only (or a pooled one)
    for location in ("file:///etc/passwd", "http://example.com/", "https://u@example.com/"):
        with pytest.raises(UrlRefused) as bad:
            await fetcher.fetch_to_file(f"{origin.base}/redirect?to={location}", max_bytes=100)
        assert bad.value.media_message == (
            "Invalid parameters: url redirected to a URL that is not https or has userinfo"
        ), location


async def test_size_cap_with_and_without_content_length(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    with await fetcher.fetch_to_file(f"{origin.base}/big?bytes=1000", max_bytes=1000) as got:
        assert got.size_bytes == 1000
    for path in ("big?bytes=1001", "liar?bytes=300000", "endless"):
        with pytest.raises(FetchError) as info:
            await fetcher.fetch_to_file(f"{origin.base}/{path}", max_bytes=1000)
        assert info.value.kind == "too_large", path
    leftovers = os.listdir(fetcher._temp_dir) if fetcher._temp_dir else []
    assert leftovers == []


async def test_total_time_cap(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    with pytest.raises(FetchError) as info:
        await fetcher.fetch_to_file(f"{origin.base}/slow?seconds=30", max_bytes=1000, time_limit=0.5)
    assert info.value.kind == "too_slow"


async def test_origin_errors(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    with pytest.raises(FetchError) as info:
        await fetcher.fetch_to_file(f"{origin.base}/status/503", max_bytes=1000)
    assert info.value.kind == "origin_error" and info.value.origin_status == 503
    assert "HTTP 503" in info.value.media_message


async def test_unresolvable_name(fetcher: SafeFetcher) -> None:
    with pytest.raises(UrlRefused) as info:
        await fetcher.fetch_to_file("https://no-such-host.invalid/a.png", max_bytes=10)
    assert info.value.kind == "unresolvable"


async def test_names_resolving_to_private_addresses_are_refused(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    # `localhost` is a name (not an address spelling): the check runs on what it resolves to.
    before = origin.connections
    with pytest.raises(UrlRefused) as info:
        await fetcher.fetch_to_file(f"https://localhost.localdomain:{origin.port}/f/a.bin", max_bytes=10)
    assert info.value.kind in ("forbidden_address", "unresolvable")
    assert origin.connections == before


async def test_send_posts_without_following_redirects(origin: HttpsOrigin, fetcher: SafeFetcher) -> None:
    sent = await fetcher.send(f"{origin.base}/hook", body=b'{"a":1}', headers={"Content-Type": "application/json"})
    assert sent.status == 204
    assert origin.requests[-1].body == b'{"a":1}' and origin.requests[-1].method == "POST"
    redirected = await fetcher.send(f"{origin.base}/redirect?to=https://example.com/", body=b"{}", method="GET")
    assert redirected.status == 302
    before = origin.connections
    with pytest.raises(UrlRefused):
        await fetcher.send(f"https://127.1:{origin.port}/hook", body=b"{}")
    assert origin.connections == before
    with pytest.raises(FetchError) as info:
        await fetcher.send(f"{origin.base}/slow?seconds=30", body=b"", method="GET", time_limit=0.5)
    assert info.value.kind in ("too_slow",)


@dataclasses.dataclass
class _Own:
    mime_type: str
    size_bytes: int
    data: bytes

    @property
    def chunks(self) -> AsyncIterator[bytes]:
        async def gen() -> AsyncIterator[bytes]:
            yield self.data

        return gen()


class _OwnUrls:
    def __init__(self) -> None:
        self.opened: list[str] = []

    def is_own(self, url: str) -> bool:
        return url.startswith("http://127.0.0.1:1/files/")

    async def open(self, url: str) -> _Own:
        self.opened.append(url)
        return _Own("image/png", 4, b"\x89PNG")


async def test_own_download_urls_are_read_from_storage(tmp_path: Path) -> None:
    own = _OwnUrls()
    f = SafeFetcher(NetSettings(), own_urls=own, temp_dir=tmp_path)
    try:
        # Plain http on a loopback address, but ours: read from storage, no network.
        with await f.fetch_to_file("http://127.0.0.1:1/files/f_1?expires=1&signature=x", max_bytes=10) as got:
            assert got.own and got.path.read_bytes() == b"\x89PNG" and got.content_type == "image/png"
        with pytest.raises(FetchError) as info:
            await f.fetch_to_file("http://127.0.0.1:1/files/f_1?expires=1&signature=x", max_bytes=3)
        assert info.value.kind == "too_large"
        with pytest.raises(UrlRefused):
            await f.fetch_to_file("http://127.0.0.1:1/other", max_bytes=10)
    finally:
        await f.aclose()
