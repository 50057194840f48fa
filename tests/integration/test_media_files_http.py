"""Media files through the media app's HTTP interface, on SQLite and PostgreSQL.

A team and key come from the accounts service; files are real media bytes generated here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.apps.assemble import build_services
from modelport.apps.media import create_media_app
from modelport.media.files.service import FILES
from modelport.media.files.signing import derive_key, sign
from modelport.services import Services
from modelport.settings import load_settings
from tests.unit.media.files import samples

PUBLIC = "http://media.test"
LIMIT = 64 * 1024


@dataclass
class Host:
    client: httpx.AsyncClient
    services: Services
    key_a: str
    key_b: str

    def auth(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.key_a}"}


async def make_host(engine: AsyncEngine, tmp_path: Path, **files: Any) -> AsyncIterator[Host]:
    settings = load_settings(
        data_dir=tmp_path,
        public_media_url=PUBLIC,
        auth_cache_seconds=0,
        files={"max_upload_bytes": LIMIT, **files},
    )
    services = build_services(settings, engine=engine)
    app = create_media_app(services)
    await accounts.create_team(engine, "team-a", tier="free")
    await accounts.create_team(engine, "team-b", tier="free")
    key_a = (await accounts.create_key(engine, "team-a")).key
    key_b = (await accounts.create_key(engine, "team-b")).key
    await services.start()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=PUBLIC) as client:
            yield Host(client, services, key_a, key_b)
    finally:
        await services.aclose()


@pytest.fixture
async def host(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Host]:
    async for h in make_host(engine, tmp_path):
        yield h


async def post_file(host: Host, data: bytes, name: str = "f.bin", key: str | None = None) -> httpx.Response:
    files = {"file": (name, data, "application/octet-stream")}
    return await host.client.post("/api/v1/media/files", files=files, headers=host.auth(key))


@pytest.mark.parametrize(
    ("data", "name", "media_type", "mime"),
    [
        (samples.image_bytes("PNG"), "pic.png", "image", "image/png"),
        (samples.wav_bytes(), "clip.wav", "audio", "audio/wav"),
        (samples.video_bytes("mp4", "mpeg4"), "clip.txt", "video", "video/mp4"),  # name says text: content wins
    ],
    ids=["png", "wav", "mp4"],
)
async def test_upload_then_download(host: Host, data: bytes, name: str, media_type: str, mime: str) -> None:
    response = await post_file(host, data, name)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["code"] == 0 and body["message"] == "success"
    file = body["data"]
    assert file["type"] == media_type and file["mime_type"] == mime
    assert file["size_bytes"] == len(data) and file["name"] == name
    assert file["file_id"].startswith("file_")
    assert isinstance(file["created_at"], int) and file["expires_at"] > file["created_at"]
    assert file["download_url"].startswith(PUBLIC + "/files/")

    # No API key needed.
    download = await host.client.get(file["download_url"])
    assert download.status_code == 200
    assert download.content == data
    assert download.headers["content-type"] == mime
    assert download.headers["content-length"] == str(len(data))
    assert download.headers["accept-ranges"] == "bytes"
    assert download.headers["x-content-type-options"] == "nosniff"


async def test_range_requests(host: Host) -> None:
    data = samples.wav_bytes()
    url = (await post_file(host, data, "a.wav")).json()["data"]["download_url"]
    part = await host.client.get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206
    assert part.content == data[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(data)}"
    assert part.headers["content-length"] == "10"
    tail = await host.client.get(url, headers={"Range": "bytes=-4"})
    assert tail.status_code == 206 and tail.content == data[-4:]
    past = await host.client.get(url, headers={"Range": f"bytes={len(data)}-"})
    assert past.status_code == 416
    assert past.headers["content-range"] == f"bytes */{len(data)}"
    assert past.json()["code"] == 416
    stale = await host.client.get(url, headers={"Range": "bytes=0-3", "If-Range": '"other"'})
    assert stale.status_code == 200 and stale.content == data
    head = await host.client.head(url)
    assert head.status_code == 200 and head.headers["content-length"] == str(len(data)) and head.content == b""


async def test_non_media_is_400(host: Host) -> None:
    for data, name in [(samples.PDF_BYTES, "doc.pdf"), (samples.TEXT_BYTES, "photo.png"), (b"", "empty.png")]:
        response = await post_file(host, data, name)
        assert response.status_code == 400
        body = response.json()
        assert body["code"] == 400 and body["message"].startswith("Invalid parameters: ")


async def test_bad_form_is_400(host: Host) -> None:
    wrong_part = await host.client.post(
        "/api/v1/media/files", files={"upload": ("a.png", samples.image_bytes())}, headers=host.auth()
    )
    assert wrong_part.status_code == 400 and "file" in wrong_part.json()["message"]
    not_multipart = await host.client.post("/api/v1/media/files", content=samples.image_bytes(), headers=host.auth())
    assert not_multipart.status_code == 400


async def test_a_file_of_exactly_the_limit_is_accepted(host: Host) -> None:
    data = samples.wav_bytes()
    data += b"\x00" * (LIMIT - len(data))
    response = await post_file(host, data, "edge.wav")
    assert response.status_code == 200, response.text
    assert response.json()["data"]["size_bytes"] == LIMIT


async def test_over_the_limit_is_413_detected_while_streaming(host: Host) -> None:
    data = samples.wav_bytes(seconds=3)  # 48 KB of samples...
    data = data + b"\x00" * (LIMIT + 1 - len(data))  # ...padded to one byte over the limit
    boundary = "xYzBoundary"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\n\r\n').encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    sent = 0

    async def stream() -> AsyncIterator[bytes]:
        nonlocal sent
        for chunk in [head, *(data[i : i + 8192] for i in range(0, len(data), 8192)), tail]:
            sent += len(chunk)
            yield chunk

    # A streamed body has no Content-Length: the limit can only be found while reading.
    response = await host.client.post(
        "/api/v1/media/files",
        content=stream(),
        headers={**host.auth(), "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status_code == 413
    expected = f"Payload too large: the file exceeds the upload limit of {LIMIT} bytes"
    assert response.json() == {"code": 413, "message": expected}
    listing = await host.client.get("/api/v1/media/files", headers=host.auth())
    assert listing.json()["data"]["total"] == 0
    assert not any(p.is_file() for p in (host.services.settings.data_dir / "media").rglob("*"))

    # With a declared Content-Length far over the limit, the refusal comes before reading.
    big = await post_file(host, data + b"\x00" * LIMIT * 2)
    assert big.status_code == 413


async def test_list_paging_and_validation(host: Host) -> None:
    ids = [(await post_file(host, samples.image_bytes(), f"{i}.png")).json()["data"]["file_id"] for i in range(3)]
    listing = (await host.client.get("/api/v1/media/files", headers=host.auth())).json()["data"]
    assert listing["total"] == 3 and listing["limit"] == 20 and listing["offset"] == 0
    assert [f["file_id"] for f in listing["files"]] == ids[::-1]
    page = (await host.client.get("/api/v1/media/files?limit=1&offset=1", headers=host.auth())).json()["data"]
    assert [f["file_id"] for f in page["files"]] == [ids[1]] and page["total"] == 3
    for query in ["limit=0", "limit=101", "offset=-1", "limit=abc"]:
        bad = await host.client.get(f"/api/v1/media/files?{query}", headers=host.auth())
        assert bad.status_code == 400, query
        assert bad.json()["message"].startswith("Invalid parameters: ")
    assert (await host.client.get("/api/v1/media/files?limit=100", headers=host.auth())).status_code == 200


async def test_teams_are_isolated_and_delete_frees_at_once(host: Host) -> None:
    file = (await post_file(host, samples.image_bytes())).json()["data"]
    other = await host.client.delete(f"/api/v1/media/files/{file['file_id']}", headers=host.auth(host.key_b))
    assert other.status_code == 404 and other.json()["code"] == 404
    assert (await host.client.get("/api/v1/media/files", headers=host.auth(host.key_b))).json()["data"]["total"] == 0
    unknown = await host.client.delete("/api/v1/media/files/file_nope", headers=host.auth())
    assert unknown.status_code == 404
    mine = await host.client.delete(f"/api/v1/media/files/{file['file_id']}", headers=host.auth())
    assert mine.status_code == 200 and mine.json()["data"] == {"file_id": file["file_id"], "deleted": True}
    assert (await host.client.get(file["download_url"])).status_code == 404
    assert (await host.client.get("/api/v1/media/files", headers=host.auth())).json()["data"]["total"] == 0


async def test_auth_required_except_download(host: Host) -> None:
    for method, path in [
        ("POST", "/api/v1/media/files"),
        ("GET", "/api/v1/media/files"),
        ("DELETE", "/api/v1/media/files/file_x"),
    ]:
        response = await host.client.request(method, path)
        assert response.status_code == 401
        assert response.json() == {"code": 401, "message": "Authentication failed: invalid team"}


async def test_bad_or_expired_signatures_are_404(host: Host) -> None:
    file = (await post_file(host, samples.image_bytes())).json()["data"]
    url: str = file["download_url"]
    tampered = url[:-3] + ("AAA" if not url.endswith("AAA") else "BBB")
    assert (await host.client.get(tampered)).status_code == 404
    assert (await host.client.get(url.split("?")[0])).status_code == 404
    # Correctly signed, but the expiry has passed.
    key = derive_key(host.services.secret_key)
    past = 1_000_000_000
    signature = sign(key, file["file_id"], past)
    expired = await host.client.get(f"/files/{file['file_id']}?expires={past}&signature={signature}")
    assert expired.status_code == 404
    assert expired.json() == {"code": 404, "message": "Not found: the download link is invalid or has expired"}


async def test_resolver_reads_our_own_url_without_the_network(host: Host) -> None:
    data = samples.image_bytes("JPEG")
    url = (await post_file(host, data, "x.jpg")).json()["data"]["download_url"]
    resolved = await host.services[FILES].resolve(url)
    assert resolved is not None and resolved.mime_type == "image/jpeg"
    assert b"".join([c async for c in resolved.chunks]) == data
    assert await host.services[FILES].resolve("https://example.com/x.jpg") is None


async def test_real_expiry_and_quota(engine: AsyncEngine, tmp_path: Path) -> None:
    async for host in make_host(engine, tmp_path, retention_seconds=1, quota_files=1):
        file = (await post_file(host, samples.image_bytes())).json()["data"]
        over = await post_file(host, samples.image_bytes())
        assert over.status_code == 413 and over.json()["message"].startswith("Quota exceeded: ")
        await asyncio.sleep(1.1)
        assert (await host.client.get(file["download_url"])).status_code == 404
        assert (await host.client.get("/api/v1/media/files", headers=host.auth())).json()["data"]["total"] == 0
        # Expired files do not count against the quota, swept or not.
        assert (await post_file(host, samples.image_bytes())).status_code == 200
