"""`local/slideshow-video` through a real `modelport serve`: text-to-video and image-to-video, the MP4 checked
with PyAV (codec, size, frame rate, frame count, duration), the price per second, refusals at creation."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import av
import httpx
import numpy as np
import pytest

from tests.integration.tasks.helpers import Team, create, free_port, make_team, task_env, task_server, wait_ended
from tests.support.server import RunningServer

SLIDESHOW = "/local/slideshow-video"
MICROS_PER_SECOND = 1000  # 0.001 USD per second of video


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with task_server(tmp_path_factory.mktemp("slideshow"), task_env(None, free_port())) as running:
        yield running


@pytest.fixture(scope="module")
def team(server: RunningServer) -> Team:
    return make_team(server, "filmmakers", topup_usd="10")


def available(server: RunningServer, team: Team) -> float:
    got = httpx.get(server.media_url + "/api/v1/team/balance", headers=team.headers)
    value: float = got.json()["data"]["available_balance"]
    return value


def finished(server: RunningServer, team: Team, body: dict[str, Any], path: str = SLIDESHOW) -> dict[str, Any]:
    created = create(server, team, body, path=path)
    assert created.status_code == 200, created.text
    task_id = created.json()["data"]["task_id"]
    task = wait_ended(server.media_url, team, [task_id], timeout=120)[task_id]
    assert task["status"] == "success", task
    return task


def decode(url: str) -> tuple[Any, list[np.ndarray[Any, Any]], float]:
    got = httpx.get(url, timeout=30)
    assert got.status_code == 200 and got.headers["content-type"] == "video/mp4"
    with av.open(io.BytesIO(got.content), "r") as container:
        stream = container.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
        duration = float(container.duration or 0) / 1_000_000
        return stream, frames, duration


def test_text_to_video_mp4_size_rate_frames_and_price(server: RunningServer, team: Team) -> None:
    before = available(server, team)
    task = finished(server, team, {"prompt": "a harbour at noon", "width": 160, "height": 96, "fps": 12, "duration": 2})
    (resource,) = task["result"]["resources"]
    assert (resource["type"], resource["format"], resource["width"], resource["height"], resource["role"]) == (
        "video",
        "mp4",
        160,
        96,
        "primary",
    )
    metadata = task["result"]["metadata"]
    assert (metadata["duration"], metadata["frame_count"], metadata["fps"]) == (2, 24, 12)
    stream, frames, duration = decode(resource["url"])
    assert stream.codec_context.name == "h264" and stream.average_rate == 12
    assert (stream.width, stream.height) == (160, 96)
    assert len(frames) == 24 and abs(duration - 2.0) < 0.1
    # Pan and zoom: the picture moves from the first frame to the last, a little at a time.
    first, second, last = (f.astype(np.int16) for f in (frames[0], frames[1], frames[-1]))
    assert np.abs(last - first).mean() > 3 * np.abs(second - first).mean()
    assert round((before - available(server, team)) * 1_000_000) == 2 * MICROS_PER_SECOND


def test_image_to_video_from_our_download_url(server: RunningServer, team: Team) -> None:
    still = finished(server, team, {"prompt": "a red barn", "width": 200, "height": 150}, path="/local/sketch-image")
    url = still["result"]["resources"][0]["url"]
    task = finished(server, team, {"image_url": url, "width": 128, "height": 72, "fps": 8, "duration": 3})
    stream, frames, duration = decode(task["result"]["resources"][0]["url"])
    assert (stream.width, stream.height, stream.average_rate) == (128, 72, 8)
    assert len(frames) == 24 and abs(duration - 3.0) < 0.15
    assert task["result"]["metadata"]["frame_count"] == 24


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"duration": 3}, "give prompt or image_url"),
        ({"prompt": "x", "duration": 11}, "duration"),
        ({"prompt": "x", "duration": 1}, "duration"),
        ({"prompt": "x", "width": 161}, "width"),
        ({"prompt": "x", "fps": 60}, "fps"),
        ({"image_url": "https://10.1.2.3/a.png"}, "image_url"),
    ],
)
def test_bad_input_is_refused(server: RunningServer, team: Team, body: dict[str, Any], message: str) -> None:
    got = create(server, team, body, path=SLIDESHOW)
    assert got.status_code == 400, got.text
    assert message in got.json()["message"]


def test_each_listed_model_has_a_docs_page(server: RunningServer, team: Team) -> None:
    listed = httpx.get(server.media_url + "/api/v1/models", headers=team.headers).json()["data"]["models"]
    expected = {
        "local/sketch-image": ("0.002 USD per image", ["prompt", "width", "height", "seed", "n"]),
        "local/style-transfer": ("0.002 USD per image", ["image_url", "style", "strength"]),
        "local/slideshow-video": ("0.001 USD per second of video", ["prompt", "image_url", "duration", "fps"]),
        "local/style-video": ("0.002 USD per second of video", ["video_url", "style"]),
    }
    assert {m["slug"] for m in listed} == set(expected)
    for model in listed:
        assert model["docs_url"] == f"{server.env['MODELPORT_PUBLIC_MEDIA_URL']}/docs/models/{model['slug']}"
        page = httpx.get(model["docs_url"])  # public: no API key
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        price, fields = expected[model["slug"]]
        assert price in page.text
        for name in fields:
            assert f"<td>{name}</td>" in page.text
        assert f"curl -s {server.env['MODELPORT_PUBLIC_MEDIA_URL']}/{model['slug']}" in page.text
        assert "/api/v1/tasks/$TASK_ID" in page.text
    assert httpx.get(server.media_url + "/docs/models/local/nope").status_code == 404
