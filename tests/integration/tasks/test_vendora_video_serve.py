"""A `vendorA/...` video model through a real `modelport serve` with the vendorA asset backend, both against a
local fake of vendorA (assets and video generation) run as a real HTTP server: `asset://<asset_id>` of an
active asset of the same team reaches vendorA as vendorA's own reference; public URLs pass through; another
team's asset, an unknown or processing asset, and non-public URLs are 400s naming the field; the video is
copied into our store; a failed job is refunded."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import av
import httpx
import pytest
import trustme

from tests.integration.assets.helpers import ADMIN_TOKEN, Assets, asset_server, make_team
from tests.support import media_make as media
from tests.support.fake_vendora import API_KEY, FakeVendorA
from tests.support.https_origin import HttpsOrigin
from tests.support.server import RunningServer

MODEL = "/vendorA/video-gen"

CATALOG = """
[[media_models]]
slug = "vendorA/video-gen"
type = "image-to-video"
description = "vendorA video generation from a prompt and an image or video reference"
docs_url = "/docs/models/vendorA/video-gen"
price_usd = "0.1"
price_unit = "second"
deadline_seconds = 60

[media_models.input_schema]
type = "object"
additionalProperties = false
required = ["prompt"]
properties.prompt = {{ type = "string" }}
properties.image_url = {{ type = "string" }}
properties.video_url = {{ type = "string" }}
properties.duration = {{ type = "integer", minimum = 1, maximum = 10 }}

[media_models.upstream]
kind = "submit_poll"
name = "vendorA"
base_url = "{base}"
api_key_env = "VENDORA_TEST_KEY"
submit_path = "/v1/videos"
status_path = "/v1/videos/{{id}}"
success_values = ["Succeeded"]
failure_values = ["Failed"]
output_path = "video.url"
error_path = "error"
asset_fields = ["image_url", "video_url"]
poll_initial_seconds = 0.2
poll_max_seconds = 0.5
"""


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("vendora-video-origin"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
async def vendora() -> AsyncIterator[FakeVendorA]:
    fake = FakeVendorA()
    fake.video_bytes = media.clip_with_audio(96, 64, 1, 8)
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture(scope="module")
def server(
    origin: HttpsOrigin, vendora: FakeVendorA, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    data_dir = tmp_path_factory.mktemp("vendora-video")
    catalog = Path(data_dir) / "catalog.toml"
    catalog.write_text(CATALOG.format(base=vendora.base_url))
    env = {
        "MODELPORT_CATALOG": str(catalog),
        "MODELPORT_ASSETS__BACKEND": "http",
        "MODELPORT_ASSETS__BASE_URL": vendora.base_url,
        "MODELPORT_ASSETS__API_KEY_ENV": "VENDORA_TEST_KEY",
        "MODELPORT_ASSETS__POLL_INTERVAL_SECONDS": "0.2",
        "VENDORA_TEST_KEY": API_KEY,
        "MODELPORT_NET__ALLOW_HOSTS": f"localhost:{origin.port},localhost:{origin.http_port},127.0.0.1:{vendora.port}",
    }
    with asset_server(data_dir / "data", origin, **env) as running:
        yield running


def funded(server: RunningServer, name: str) -> str:
    key = make_team(server, name, asset_service=True)
    got = httpx.post(
        f"{server.media_url}/admin/v1/teams/{name}/topups",
        json={"amount_usd": "10"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=30,
    )
    assert got.status_code == 200, got.text
    return key


@pytest.fixture(scope="module")
def keys(server: RunningServer) -> tuple[str, str]:
    return funded(server, "studio-a"), funded(server, "studio-b")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as c:
        yield c


async def create(client: httpx.AsyncClient, server: RunningServer, key: str, body: dict[str, Any]) -> httpx.Response:
    return await client.post(server.media_url + MODEL, json=body, headers={"Authorization": f"Bearer {key}"})


async def ended(client: httpx.AsyncClient, server: RunningServer, key: str, task_id: str) -> dict[str, Any]:
    for _ in range(600):
        got = await client.get(f"{server.media_url}/api/v1/tasks/{task_id}", headers={"Authorization": f"Bearer {key}"})
        data: dict[str, Any] = got.json()["data"]
        if data["status"] in ("success", "failed", "cancelled"):
            return data
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id} did not end")


async def balance(client: httpx.AsyncClient, server: RunningServer, key: str) -> float:
    got = await client.get(server.media_url + "/api/v1/team/balance", headers={"Authorization": f"Bearer {key}"})
    value: float = got.json()["data"]["available_balance"]
    return value


async def test_asset_reference_becomes_vendoras_own_and_the_video_is_stored(
    client: httpx.AsyncClient, server: RunningServer, keys: tuple[str, str], origin: HttpsOrigin, vendora: FakeVendorA
) -> None:
    key_a, key_b = keys
    assets = Assets(client, server, key_a)
    image_url = origin.serve("still.png", media.image(400, 400))
    reg = await assets.register({"url": image_url, "type": "image"})
    assert reg.status_code == 200, reg.text
    asset_id = reg.json()["data"]["asset_id"]
    assert (await assets.settle(asset_id))["status"] == "active"
    upstream_id = vendora.by_key[asset_id]  # vendorA's id of the asset (the upload's Idempotency-Key is ours)

    before = await balance(client, server, key_a)
    made = await create(client, server, key_a, {"prompt": "waves", "image_url": f"asset://{asset_id}", "duration": 2})
    assert made.status_code == 200, made.text
    task = await ended(client, server, key_a, made.json()["data"]["task_id"])
    assert task["status"] == "success", task
    sent = next(v for v in vendora.videos.values() if v["prompt"] == "waves")
    assert sent["image_url"] == f"asset://{upstream_id}" and sent["duration"] == 2
    resource = task["result"]["resources"][0]
    assert (resource["type"], resource["format"], resource["width"], resource["height"]) == ("video", "mp4", 96, 64)
    video = (await client.get(resource["url"])).content
    with av.open(io.BytesIO(video), "r") as container:
        assert container.streams.video[0].average_rate == 8
    assert round((before - await balance(client, server, key_a)) * 10) == 2  # 2 s x 0.1 USD

    # A public https URL passes through unchanged.
    made = await create(client, server, key_a, {"prompt": "by url", "image_url": image_url})
    assert made.status_code == 200, made.text
    assert (await ended(client, server, key_a, made.json()["data"]["task_id"]))["status"] == "success"
    assert next(v for v in vendora.videos.values() if v["prompt"] == "by url")["image_url"] == image_url

    # Another team's asset reads as unknown: 400 naming the field, nothing sent to vendorA.
    jobs = len(vendora.videos)
    other = await create(client, server, key_b, {"prompt": "x", "image_url": f"asset://{asset_id}"})
    assert other.status_code == 400 and "image_url" in other.json()["message"], other.text
    # An image asset is not a video reference.
    wrong = await create(client, server, key_a, {"prompt": "x", "video_url": f"asset://{asset_id}"})
    assert wrong.status_code == 400 and "video_url" in wrong.json()["message"], wrong.text
    assert "not video" in wrong.json()["message"]
    assert len(vendora.videos) == jobs


async def test_processing_unknown_and_non_public_references_are_refused(
    client: httpx.AsyncClient, server: RunningServer, keys: tuple[str, str], origin: HttpsOrigin, vendora: FakeVendorA
) -> None:
    key_a, _ = keys
    vendora.status_after_polls = 10_000  # the next asset stays processing
    try:
        reg = await Assets(client, server, key_a).register(
            {"url": origin.serve("p.png", media.image(400, 400)), "type": "image"}
        )
        assert reg.status_code == 200, reg.text
        pending = reg.json()["data"]["asset_id"]
        got = await create(client, server, key_a, {"prompt": "x", "image_url": f"asset://{pending}"})
        assert got.status_code == 400 and "still processing" in got.json()["message"], got.text
    finally:
        vendora.status_after_polls = 1
    for field, value in (
        ("image_url", "asset://asset_nope"),
        ("video_url", "asset://../x"),
        ("image_url", "http://example.com/a.png"),
        ("image_url", "https://10.1.2.3/a.png"),
        ("video_url", "https://127.0.0.1/a.mp4"),
    ):
        got = await create(client, server, key_a, {"prompt": "x", field: value})
        assert got.status_code == 400, (field, value, got.text)
        assert field in got.json()["message"], got.text


async def test_a_failed_job_is_refunded(
    client: httpx.AsyncClient, server: RunningServer, keys: tuple[str, str]
) -> None:
    key_a, _ = keys
    before = await balance(client, server, key_a)
    made = await create(client, server, key_a, {"prompt": "please fail", "duration": 3})
    assert made.status_code == 200, made.text
    task = await ended(client, server, key_a, made.json()["data"]["task_id"])
    assert task["status"] == "failed" and task["error"]["code"] == "upstream_failed", task
    assert "blocked by moderation" in task["error"]["message"]
    assert await balance(client, server, key_a) == before
