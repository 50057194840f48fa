"""Media files end to end through a real `modelport serve` process (uvicorn, real sockets)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.ports import free_port
from tests.support.server import RunningServer, run_server
from tests.unit.media.files import samples

LIMIT = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    port = free_port()
    with run_server(
        tmp_path_factory.mktemp("files-serve"),
        "--media-port",
        str(port),
        MODELPORT_PUBLIC_MEDIA_URL=f"http://127.0.0.1:{port}",
        MODELPORT_FILES__MAX_UPLOAD_BYTES=str(LIMIT),
        MODELPORT_FILES__SWEEP_INTERVAL_SECONDS="1",
    ) as running:
        yield running


def auth(server: RunningServer) -> dict[str, str]:
    assert server.demo_key is not None
    return {"Authorization": f"Bearer {server.demo_key}"}


def test_upload_download_range_and_delete(server: RunningServer) -> None:
    video = samples.video_bytes("mp4", "mpeg4", frames=20)
    up = httpx.post(
        server.media_url + "/api/v1/media/files", headers=auth(server), files={"file": ("clip.mp4", video, "video/mp4")}
    )
    assert up.status_code == 200, up.text
    file = up.json()["data"]
    assert file["type"] == "video" and file["mime_type"] == "video/mp4"

    full = httpx.get(file["download_url"])
    assert full.status_code == 200 and full.content == video
    assert full.headers["content-type"] == "video/mp4" and full.headers["content-length"] == str(len(video))
    part = httpx.get(file["download_url"], headers={"Range": "bytes=4-11"})
    assert part.status_code == 206 and part.content == video[4:12] == b"ftypisom"

    gone = httpx.delete(f"{server.media_url}/api/v1/media/files/{file['file_id']}", headers=auth(server))
    assert gone.status_code == 200
    assert httpx.get(file["download_url"]).status_code == 404


def test_streamed_upload_over_the_limit_is_413(server: RunningServer) -> None:
    boundary = "e2eBoundary"
    payload = samples.wav_bytes() + b"\x00" * LIMIT

    def body() -> Iterator[bytes]:
        yield f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'.encode()
        for i in range(0, len(payload), 65536):
            yield payload[i : i + 65536]
        yield f"\r\n--{boundary}--\r\n".encode()

    response = httpx.post(
        server.media_url + "/api/v1/media/files",
        content=body(),
        headers={**auth(server), "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status_code == 413
    assert response.json()["code"] == 413
    listing = httpx.get(server.media_url + "/api/v1/media/files", headers=auth(server))
    assert listing.json()["data"]["total"] == 0
    media_root = Path(server.env["MODELPORT_DATA_DIR"]) / "media"
    assert not any(p.is_file() for p in media_root.rglob("*"))
