"""Provider asset registration through a real `modelport serve` (embedded library, SQLite), fetching from a
local HTTPS origin with a test CA that the server trusts through MODELPORT_NET__ALLOW_HOSTS/CA_BUNDLE."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import trustme

from tests.integration.assets.helpers import Assets, asset_server, make_team
from tests.support import media_make as media
from tests.support.https_origin import HttpsOrigin
from tests.support.server import RunningServer
from tests.unit.media.assets.test_probe_pages import tiff

REJECTED = "Invalid parameters: asset was rejected by the provider"
FORMAT = "Invalid format: url must be an https URL without userinfo"
TYPE = "Invalid parameters: type must be image, video, or audio"
OFF = "Service unavailable: asset service is not activated for this account"


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("origin"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
def server(origin: HttpsOrigin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with asset_server(tmp_path_factory.mktemp("assets-serve"), origin) as running:
        yield running


@pytest.fixture(scope="module")
def keys(server: RunningServer) -> dict[str, str]:
    return {
        "main": make_team(server, "assets-main", asset_service=True),
        "other": make_team(server, "assets-other", asset_service=True),
        "off": make_team(server, "assets-off", asset_service=False),
    }


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as c:
        yield c


@pytest.fixture
def main(client: httpx.AsyncClient, server: RunningServer, keys: dict[str, str]) -> Assets:
    return Assets(client, server, keys["main"])


# -- the happy path ---------------------------------------------------------------------------------


async def test_register_poll_active_list_and_delete(main: Assets, origin: HttpsOrigin) -> None:
    url = origin.serve("ok.png", media.image(400, 400), "image/png")
    reg = await main.register({"url": url, "type": "image", "name": "logo"})
    assert reg.status_code == 200, reg.text
    body = reg.json()
    assert body["code"] == 0 and body["message"] == "success"
    data = body["data"]
    assert set(data) == {"provider", "asset_id", "type", "name", "status"}
    assert data["provider"] == "vendorA" and data["type"] == "image" and data["name"] == "logo"
    assert data["status"] == "processing"
    settled = await main.settle(data["asset_id"])
    assert settled["status"] == "active" and "reason" not in settled
    listing = (await main.list()).json()["data"]
    assert data["asset_id"] in [a["asset_id"] for a in listing["assets"]] and listing["total"] >= 1
    gone = await main.delete(data["asset_id"])
    assert gone.status_code == 200 and gone.json()["data"]["deleted"] is True
    assert (await main.get(data["asset_id"])).status_code == 404
    assert (await main.delete(data["asset_id"])).status_code == 404


async def test_zero_balance_team_registers_and_is_not_billed(main: Assets, origin: HttpsOrigin) -> None:
    url = origin.serve("zero.jpg", media.image(500, 400, "JPEG"))
    reg = await main.register({"url": url, "type": "image", "name": "   "})
    assert reg.status_code == 200, reg.text
    assert "name" not in reg.json()["data"]  # blank name is treated as omitted
    assert (await main.settle(reg.json()["data"]["asset_id"]))["status"] == "active"
    balance = await main.client.get(main.server.media_url + "/api/v1/team/balance", headers=main.headers)
    assert balance.status_code == 200
    assert balance.json()["data"]["available_balance"] == 0 and balance.json()["data"]["frozen_balance"] == 0


# -- limits at every edge -----------------------------------------------------------------------------

INSIDE = [
    ("image", "png-301", lambda: media.image(301, 301)),
    ("image", "png-5999x2400", lambda: media.image(5999, 2400)),
    ("image", "ratio-just-under-2.5", lambda: media.image(999, 400)),
    ("image", "ratio-just-over-0.4", lambda: media.image(401, 1000)),
    ("image", "jpeg", lambda: media.image(640, 480, "JPEG")),
    ("image", "webp", lambda: media.image(640, 480, "WEBP")),
    ("image", "tiff", lambda: media.image(640, 480, "TIFF")),
    ("image", "gif", lambda: media.image(640, 480, "GIF")),
    ("image", "heic", lambda: media.image(640, 480, "HEIF")),
    ("image", "size-just-under-30MB", lambda: media.image(400, 400, pad_to=29_999_999)),
    ("video", "480p-min-pixels", lambda: media.video(850, 480, 2.0)),
    ("video", "480p-portrait", lambda: media.video(480, 850, 2.0)),
    ("video", "720p-ratio-2.5", lambda: media.video(1800, 720, 2.0)),
    ("video", "1080p-ratio-0.4", lambda: media.video(1080, 2700, 2.0)),
    ("video", "4k-max-pixels", lambda: media.video(3840, 2160, 2.0)),
    ("video", "30s", lambda: media.video(850, 480, 30.0)),
    ("video", "mov", lambda: media.video(850, 480, 2.0, fmt="mov")),
    ("audio", "wav-2s", lambda: media.wav(2.0)),
    ("audio", "wav-30s", lambda: media.wav(30.0)),
    ("audio", "mp3", lambda: media.mp3(3.0)),
]
OUTSIDE = [
    ("image", "png-300", lambda: media.image(300, 400)),
    ("image", "png-6000", lambda: media.image(6000, 2500)),
    ("image", "ratio-2.5", lambda: media.image(1000, 400)),
    ("image", "ratio-0.4", lambda: media.image(400, 1000)),
    ("image", "bmp", lambda: media.image(640, 480, "BMP")),
    ("image", "size-30MB", lambda: media.image(400, 400, pad_to=30_000_000)),
    ("video", "below-min-pixels", lambda: media.video(849, 480, 2.0)),
    ("video", "not-a-resolution-class", lambda: media.video(800, 600, 2.0)),
    ("video", "ratio-over-2.5", lambda: media.video(1802, 720, 2.0)),
    ("video", "ratio-under-0.4", lambda: media.video(1080, 2702, 2.0)),
    ("video", "4k-over-max-pixels", lambda: media.video(3842, 2160, 2.0)),
    ("video", "1.5s", lambda: media.video(850, 480, 1.5, fps=2)),
    ("video", "30.5s", lambda: media.video(850, 480, 30.5, fps=2)),
    ("audio", "wav-1.5s", lambda: media.wav(1.5)),
    ("audio", "wav-30.5s", lambda: media.wav(30.5)),
    ("image", "video-declared-image", lambda: media.video(850, 480, 2.0)),
    ("video", "image-declared-video", lambda: media.image(640, 480)),
    ("image", "text-disguised-as-png", lambda: b"\x89PNG\r\n\x1a\n" + b"definitely not an image" * 40),
    ("video", "truncated-head", lambda: media.video(850, 480, 2.0)[:300]),
    ("image", "empty", lambda: b""),
]


@pytest.mark.parametrize(("kind", "label", "make"), INSIDE, ids=[c[1] for c in INSIDE])
async def test_files_just_inside_the_limits_become_active(
    main: Assets, origin: HttpsOrigin, kind: str, label: str, make: object
) -> None:
    assert callable(make)
    # The origin's Content-Type is a lie on purpose: the type comes from the bytes.
    url = origin.serve(f"in-{label}", make(), "application/octet-stream")
    reg = await main.register({"url": url, "type": kind})
    assert reg.status_code == 200, reg.text
    settled = await main.settle(reg.json()["data"]["asset_id"])
    assert settled["status"] == "active", settled


@pytest.mark.parametrize(("kind", "label", "make"), OUTSIDE, ids=[c[1] for c in OUTSIDE])
async def test_files_just_outside_the_limits_are_rejected(
    main: Assets, origin: HttpsOrigin, kind: str, label: str, make: object
) -> None:
    assert callable(make)
    url = origin.serve(f"out-{label}", make(), "image/png")
    reg = await main.register({"url": url, "type": kind})
    assert reg.status_code == 400, reg.text
    assert reg.json()["code"] == 400 and reg.json()["message"] == REJECTED
    assert reg.json()["reason"]


async def test_video_over_200_mb_is_rejected_without_downloading(main: Assets, origin: HttpsOrigin) -> None:
    reg = await main.register({"url": f"{origin.base}/big?bytes=200000001", "type": "video"})
    assert reg.status_code == 400 and reg.json()["message"] == REJECTED
    assert "200 MB" in reg.json()["reason"]


async def test_oversized_body_without_length_is_cut_off(main: Assets, origin: HttpsOrigin) -> None:
    reg = await main.register({"url": f"{origin.base}/endless", "type": "image"})
    assert reg.status_code == 400 and reg.json()["message"] == REJECTED
    assert "30 MB" in reg.json()["reason"]


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("video", lambda: media.truncated(media.video(850, 480, 4.0), 0.6)),
        ("image", lambda: media.truncated(media.image(640, 480, "JPEG"), 0.5)),
    ],
    ids=["truncated-video", "truncated-jpeg"],
)
async def test_files_that_do_not_fully_decode_fail_in_moderation(
    main: Assets, origin: HttpsOrigin, kind: str, make: object
) -> None:
    assert callable(make)
    url = origin.serve(f"cut-{kind}", make())
    reg = await main.register({"url": url, "type": kind})
    assert reg.status_code == 200, reg.text
    assert reg.json()["data"]["status"] == "processing"
    settled = await main.settle(reg.json()["data"]["asset_id"])
    assert settled["status"] == "failed" and "decode" in settled["reason"]


# -- the fetch ------------------------------------------------------------------------------------------


async def test_redirects_allowed_and_forbidden(main: Assets, origin: HttpsOrigin) -> None:
    target = origin.serve("redir.png", media.image(400, 400))
    ok = await main.register({"url": f"{origin.base}/redirect?to={target}", "type": "image"})
    assert ok.status_code == 200, ok.text
    before = origin.connections
    bad = await main.register(
        {"url": f"{origin.base}/redirect?to=https://127.0.0.1:{origin.port}/f/redir.png", "type": "image"}
    )
    assert bad.status_code == 400 and "loopback" in bad.json()["message"]
    assert origin.seen_paths()[-1].startswith("/redirect")
    assert origin.connections - before <= 1
    many = await main.register({"url": f"{origin.base}/redirect?n=4&to={target}", "type": "image"})
    assert many.status_code == 400 and "redirected more than 3 times" in many.json()["message"]


async def test_slow_origin_is_a_400_not_a_hang(main: Assets, origin: HttpsOrigin) -> None:
    reg = await main.register({"url": f"{origin.base}/slow?seconds=20", "type": "image"})
    assert reg.status_code == 400 and "within 3 seconds" in reg.json()["message"]


async def test_origin_error_status(main: Assets, origin: HttpsOrigin) -> None:
    reg = await main.register({"url": f"{origin.base}/status/404", "type": "image"})
    assert reg.status_code == 400 and reg.json()["message"] == "Invalid parameters: url answered HTTP 404"


FORBIDDEN = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0x7f.1",
    "0177.0.0.1",
    "017700000001",
    "127.0.0.1.",
    "0.0.0.0",
    "0",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::]",
    "10.0.0.1",
    "100.64.0.1",
    "192.0.0.1",
    "198.18.0.1",
    "169.254.169.254",
    "224.0.0.1",
    "[fe80::1]",
    "[fd00::1]",
]


async def test_every_forbidden_spelling_is_refused_without_a_connection(main: Assets, origin: HttpsOrigin) -> None:
    before = origin.connections
    for host in FORBIDDEN:
        reg = await main.register({"url": f"https://{host}:{origin.port}/f/ok.png", "type": "image"})
        assert reg.status_code == 400, (host, reg.text)
        assert reg.json()["message"].startswith("Invalid parameters: url "), (host, reg.text)
    assert origin.connections == before
    # A name is checked on what it resolves to: localhost is allowed on the origin's ports only.
    named = await main.register({"url": "https://localhost:1/f/ok.png", "type": "image"})
    assert named.status_code == 400
    assert named.json()["message"] == (
        "Invalid parameters: url host 'localhost' resolves to a loopback address, which the server does not fetch"
    )


async def test_allow_listed_hosts_may_use_plain_http_and_are_logged(
    main: Assets, origin: HttpsOrigin, server: RunningServer
) -> None:
    assert any(
        "MODELPORT_NET__ALLOW_HOSTS" in line and f"localhost:{origin.http_port}" in line for line in server.banner
    )
    assert any(str(origin.ca_file) in line for line in server.banner)
    origin.serve("plain.png", media.image(400, 400))
    reg = await main.register({"url": f"http://localhost:{origin.http_port}/f/plain.png", "type": "image"})
    assert reg.status_code == 200, reg.text
    # The allow-list is literal: the same server under another spelling is still refused.
    before = origin.connections
    for url in (f"http://127.0.0.1:{origin.http_port}/f/plain.png", f"https://127.0.0.1:{origin.port}/f/plain.png"):
        refused = await main.register({"url": url, "type": "image"})
        assert refused.status_code == 400, refused.text
    assert origin.connections == before


async def test_body_over_64_kib_is_413(main: Assets) -> None:
    reg = await main.register({"url": "https://example.com/a.png", "type": "image", "pad": "x" * 70_000})
    assert reg.status_code == 413 and reg.json()["code"] == 413


async def test_own_download_url_is_read_from_storage(main: Assets) -> None:
    up = await main.client.post(
        main.server.media_url + "/api/v1/media/files",
        headers=main.headers,
        files={"file": ("clip.mp4", media.video(850, 480, 2.0), "video/mp4")},
    )
    assert up.status_code == 200, up.text
    download_url = up.json()["data"]["download_url"]
    assert download_url.startswith("http://127.0.0.1:")  # plain http on loopback: only ours may pass
    reg = await main.register({"url": download_url, "type": "video"})
    assert reg.status_code == 200, reg.text
    assert (await main.settle(reg.json()["data"]["asset_id"]))["status"] == "active"
    tampered = download_url.replace("signature=", "signature=x")
    bad = await main.register({"url": tampered, "type": "video"})
    assert bad.status_code == 400


# -- body rules, in order -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"type": "image"}, "Missing required parameter: url is required"),
        ({"url": None, "type": "image"}, "Missing required parameter: url is required"),
        ({"url": "", "type": "bogus"}, "Missing required parameter: url is required"),
        (
            {"url": "http://example.com/a.png", "type": "image"},
            FORMAT,
        ),
        (
            {"url": "https://u:p@example.com/a.png", "type": "image"},
            FORMAT,
        ),
        (
            {"url": "ftp://example.com/a.png", "type": "bogus"},
            FORMAT,
        ),
        # Not an absolute https URL with a host (issue 20 rule 4): the interface's `Invalid format` message.
        ({"url": "https:///x.png", "type": "image"}, FORMAT),
        ({"url": "https:x.png", "type": "image"}, FORMAT),
        ({"url": "https://:443/x.png", "type": "image"}, FORMAT),
        ({"url": "https://[::1/x.png", "type": "image"}, FORMAT),
        (
            {"url": "https://example.com/" + "a" * 2040, "type": "image"},
            "Invalid parameters: url must be at most 2048 characters",
        ),
        (
            {"url": "https://example.com/a.png", "type": "Image"},
            TYPE,
        ),
        ({"url": "https://example.com/a.png"}, TYPE),
        ({"url": "https://example.com/a.png", "type": 1}, TYPE),
        (
            {"url": "https://example.com/a.png", "type": "image", "name": "n" * 65},
            "Invalid parameters: name must be at most 64 characters",
        ),
        ({"url": "https://example.com/a.png", "type": "image", "name": 5}, "Invalid parameters: name must be a string"),
        ({"url": 5, "type": "image"}, "Invalid parameters: url must be a string"),
        (
            {"url": "https://example.com/a.png", "type": "image", "name": "a\u0000b"},
            "Invalid parameters: name must not contain control characters",
        ),
        (
            {"url": "https://example.com/\u0000.png", "type": "image"},
            "Invalid parameters: url contains whitespace or control characters",
        ),
        (
            {"url": "https://127.0.0.1/a.png", "type": "video", "name": "n" * 65},
            "Invalid parameters: name must be at most 64 characters",
        ),
        ([], "Invalid parameters: the body must be a JSON object"),
        ("https://example.com/a.png", "Invalid parameters: the body must be a JSON object"),
    ],
)
async def test_body_checks_in_order(main: Assets, body: object, message: str) -> None:
    reg = await main.register(body)
    assert reg.status_code == 400, reg.text
    assert reg.json() == {"code": 400, "message": message}


async def test_malformed_json_and_unknown_provider(main: Assets) -> None:
    for raw in (b"{", b"", b"\xff\xfe", b'{"url": "https://example.com/a.png", "type": "image"'):
        reg = await main.register(raw=raw)
        assert reg.status_code == 400 and reg.json()["message"].startswith("Invalid parameters: "), raw
    other = await main.register({"url": "https://example.com/a.png", "type": "image"}, provider="vendorB")
    assert other.status_code == 400 and "vendorB" in other.json()["message"]


async def test_name_of_64_characters_is_kept(main: Assets, origin: HttpsOrigin) -> None:
    url = origin.serve("named.png", media.image(400, 400))
    reg = await main.register({"url": url, "type": "image", "name": "é" * 64})
    assert reg.status_code == 200 and reg.json()["data"]["name"] == "é" * 64


# -- access ---------------------------------------------------------------------------------------------


async def test_auth_flag_and_team_isolation(
    client: httpx.AsyncClient, server: RunningServer, keys: dict[str, str], main: Assets, origin: HttpsOrigin
) -> None:
    url = origin.serve("mine.png", media.image(400, 400))
    mine = (await main.register({"url": url, "type": "image"})).json()["data"]["asset_id"]
    other = Assets(client, server, keys["other"])
    assert (await other.get(mine)).status_code == 404
    assert (await other.delete(mine)).status_code == 404
    assert mine not in [a["asset_id"] for a in (await other.list()).json()["data"]["assets"]]
    assert (await main.get(mine)).status_code == 200

    off = Assets(client, server, keys["off"])
    refused = await off.register({"url": url, "type": "image"})
    assert refused.status_code == 503
    assert refused.json() == {
        "code": 503,
        "message": "Service unavailable: asset service is not activated for this account",
    }

    for odd in ("%00", "a%00b", "x" * 65, "..%2F..%2Fetc", "%F0%9F%98%80"):
        # 404 from us, or 400 where the server's front door refuses a NUL in the path: never a 500.
        assert (await main.get(odd)).status_code in (400, 404), odd
        assert (await main.delete(odd)).status_code in (400, 404), odd

    nobody = Assets(client, server, "sk-not-a-key")
    assert (await nobody.register({"url": url, "type": "image"})).status_code == 401
    assert (await nobody.list()).status_code == 401


async def test_list_pages_newest_first_and_filters_by_status(
    client: httpx.AsyncClient, server: RunningServer, origin: HttpsOrigin
) -> None:
    team = Assets(client, server, make_team(server, "assets-list", asset_service=True))
    good = origin.serve("list-good.png", media.image(400, 400))
    cut = origin.serve("list-cut.jpg", media.truncated(media.image(640, 480, "JPEG"), 0.5))
    ids = []
    for url in (good, cut, good):
        reg = await team.register({"url": url, "type": "image"})
        ids.append(reg.json()["data"]["asset_id"])
        await team.settle(ids[-1])
    page = (await team.list(limit=2)).json()["data"]
    assert page["total"] == 3 and [a["asset_id"] for a in page["assets"]] == ids[::-1][:2]
    rest = (await team.list(limit=2, offset=2)).json()["data"]
    assert [a["asset_id"] for a in rest["assets"]] == [ids[0]]
    failed = (await team.list(status="failed")).json()["data"]
    assert failed["total"] == 1 and failed["assets"][0]["asset_id"] == ids[1]
    assert failed["assets"][0]["reason"]
    for bad in ({"limit": 0}, {"limit": 101}, {"offset": -1}, {"status": "gone"}, {"limit": "x"}):
        got = await team.list(**bad)
        assert got.status_code == 400 and got.json()["message"].startswith("Invalid parameters"), bad


# -- issue 21 item 6: every page of a multi-image file is probed ------------------------------------


async def test_a_multipage_tiff_with_a_page_past_the_limits_is_rejected_at_registration(
    main: Assets, origin: HttpsOrigin
) -> None:
    url = origin.serve("two-pages.tiff", tiff((400, 400), (6000, 3000)), "image/tiff")
    reg = await main.register({"url": url, "type": "image"})
    assert reg.status_code == 400, reg.text
    assert reg.json()["message"] == REJECTED and "page 2" in reg.json()["reason"], reg.json()
    fine = origin.serve("pages-ok.tiff", tiff((400, 400), (640, 480)), "image/tiff")
    ok = await main.register({"url": fine, "type": "image"})
    assert ok.status_code == 200, ok.text
    assert (await main.settle(ok.json()["data"]["asset_id"]))["status"] == "active"
