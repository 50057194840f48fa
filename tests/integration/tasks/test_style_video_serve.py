"""`local/style-video` through a real `modelport serve`: a clip with sound from our own download URL, an https
URL (local HTTPS origin) and `asset://<id>`; the MP4 checked with PyAV (H.264, size, frame rate, frame count,
duration, the audio track kept), every frame repainted (structural similarity against the input's frame), the
price per second rendered, refusals at creation and unreadable input failing with a refund."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator
from typing import Any

import av
import httpx
import numpy as np
import pytest
import trustme
from PIL import Image

from tests.integration.assets.helpers import Assets, asset_server
from tests.integration.tasks import serve_calls
from tests.integration.tasks.serve_calls import balance, funded_team
from tests.support.https_origin import HttpsOrigin
from tests.support.media_make import clip_with_audio, video
from tests.support.server import RunningServer
from tests.support.ssim import ssim

STYLE_VIDEO = "/local/style-video"
MICROS_PER_SECOND = 2000  # 0.002 USD per second
FROZEN_SECONDS = 10  # the most a task can cost is frozen at creation


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("style-video-origin"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
def server(origin: HttpsOrigin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with asset_server(tmp_path_factory.mktemp("style-video"), origin) as running:
        yield running


@pytest.fixture(scope="module")
def key(server: RunningServer) -> str:
    return funded_team(server, "editors")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as c:
        yield c


async def run_task(client: httpx.AsyncClient, server: RunningServer, key: str, body: dict[str, Any]) -> dict[str, Any]:
    return await serve_calls.run_task(client, server, key, STYLE_VIDEO, body)


def frames_of(data: bytes) -> tuple[Any, Any, list[Image.Image], float]:
    with av.open(io.BytesIO(data), "r") as container:
        video = container.streams.video[0]
        audio = container.streams.audio[0] if container.streams.audio else None
        frames = [Image.fromarray(f.to_ndarray(format="rgb24")) for f in container.decode(video)]
        return video, audio, frames, float(container.duration or 0) / 1_000_000


def audio_seconds(data: bytes) -> float:
    with av.open(io.BytesIO(data), "r") as container:
        stream = container.streams.audio[0]
        return sum(int(f.samples) for f in container.decode(stream)) / stream.rate


async def output(client: httpx.AsyncClient, task: dict[str, Any]) -> bytes:
    assert task["status"] == "success", task
    (resource,) = task["result"]["resources"]
    assert (resource["type"], resource["format"], resource["role"]) == ("video", "mp4", "primary")
    got = await client.get(resource["url"])
    assert got.status_code == 200 and got.headers["content-type"] == "video/mp4"
    return got.content


async def test_own_download_url_every_frame_repainted_audio_kept(
    client: httpx.AsyncClient, server: RunningServer, key: str
) -> None:
    clip = clip_with_audio(96, 64, 2, 8)
    uploaded = await client.post(
        server.media_url + "/api/v1/media/files",
        files={"file": ("clip.mp4", clip, "video/mp4")},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert uploaded.status_code == 200, uploaded.text
    before = await balance(client, server, key)
    task = await run_task(client, server, key, {"video_url": uploaded.json()["data"]["download_url"], "style": 5})
    data = await output(client, task)
    resource = task["result"]["resources"][0]
    assert (resource["width"], resource["height"]) == (96, 64)
    metadata = task["result"]["metadata"]
    assert (metadata["duration"], metadata["frame_count"], metadata["fps"], metadata["audio"]) == (2.0, 16, 8, True)

    video, audio, frames, duration = frames_of(data)
    assert video.codec_context.name == "h264" and video.average_rate == 8
    assert (video.width, video.height) == (96, 64) and len(frames) == 16
    assert abs(duration - 2.0) < 0.25
    assert audio is not None and audio.codec_context.name == "aac"
    assert abs(audio_seconds(data) - audio_seconds(clip)) < 0.1  # the whole sound track, not a cut

    _, _, originals, _ = frames_of(clip)
    scores = [ssim(original, painted) for original, painted in zip(originals, frames, strict=True)]
    assert max(scores) < 0.6, scores  # every frame went through the network: none is a copy
    assert ssim(originals[0], originals[0].copy()) > 0.999
    # Still a video of the input: consecutive output frames change where the input's bars move.
    first, second = (np.asarray(f, dtype=np.int16) for f in frames[:2])
    assert np.abs(second - first).mean() > 1

    # Charged for the 2 seconds rendered; the rest of the 10 s frozen at creation came back.
    assert round((before - await balance(client, server, key)) * 1_000_000) == 2 * MICROS_PER_SECOND


async def test_https_url_and_asset_reference(
    client: httpx.AsyncClient, server: RunningServer, key: str, origin: HttpsOrigin
) -> None:
    # Video assets must be 480p or more, 407,696 pixels or more and 2 s long; the output's longer side is 512.
    clip = clip_with_audio(854, 480, 2, 4)
    url = origin.serve("clip.mp4", clip, "video/mp4")
    from_https = await output(client, await run_task(client, server, key, {"video_url": url}))
    video, audio, frames, _ = frames_of(from_https)
    assert (video.width, video.height, len(frames)) == (512, 286, 8) and audio is not None

    assets = Assets(client, server, key)
    reg = await assets.register({"url": url, "type": "video"})
    assert reg.status_code == 200, reg.text
    asset_id = reg.json()["data"]["asset_id"]
    assert (await assets.settle(asset_id))["status"] == "active"
    from_asset = await output(client, await run_task(client, server, key, {"video_url": f"asset://{asset_id}"}))
    video, audio, frames, _ = frames_of(from_asset)
    assert (video.width, video.height, len(frames)) == (512, 286, 8) and audio is not None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "video_url"),
        ({"video_url": "asset://asset_does_not_exist"}, "video_url"),
        ({"video_url": "http://example.com/a.mp4"}, "video_url"),
        ({"video_url": "https://10.0.0.1/a.mp4"}, "video_url"),
        ({"video_url": "https://example.com/a.mp4", "style": 26}, "style"),
        ({"video_url": "https://example.com/a.mp4", "prompt": "x"}, "prompt"),
    ],
)
async def test_bad_input_is_refused_at_creation(
    client: httpx.AsyncClient, server: RunningServer, key: str, body: dict[str, Any], param: str
) -> None:
    got = await client.post(server.media_url + STYLE_VIDEO, json=body, headers={"Authorization": f"Bearer {key}"})
    assert got.status_code == 400, got.text
    assert param in got.json()["message"]


async def test_unreadable_or_too_long_video_fails_and_refunds(
    client: httpx.AsyncClient, server: RunningServer, key: str, origin: HttpsOrigin
) -> None:
    before = await balance(client, server, key)
    for name, data, says in (
        ("text.mp4", b"not a video at all", "not a video"),
        ("long.mp4", clip_with_audio(64, 48, 12, 2), "at most 10 s"),
    ):
        task = await run_task(client, server, key, {"video_url": origin.serve(name, data, "video/mp4")})
        assert task["status"] == "failed", task
        assert task["error"]["code"] == "invalid_input" and says in task["error"]["message"], task
    assert await balance(client, server, key) == before


# -- issue 21 item 5: frame sizes checked from the container before decoding ------------------------


@pytest.mark.parametrize(("width", "height"), [(6002, 64), (4000, 2100)])
async def test_frames_past_the_video_size_bounds_are_refused_before_decoding(
    client: httpx.AsyncClient, server: RunningServer, key: str, origin: HttpsOrigin, width: int, height: int
) -> None:
    before = await balance(client, server, key)
    data = video(width, height, 2, fmt="mov", fps=2)
    task = await run_task(client, server, key, {"video_url": origin.serve(f"big-{width}.mov", data, "video/quicktime")})
    assert task["status"] == "failed", task
    assert task["error"]["code"] == "invalid_input", task
    assert f"{width}x{height} px" in task["error"]["message"] and "at most 6000 px" in task["error"]["message"], task
    assert await balance(client, server, key) == before
