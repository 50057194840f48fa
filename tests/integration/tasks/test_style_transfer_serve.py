"""`local/style-transfer` through a real `modelport serve`: the image from an https URL (local HTTPS origin
with a test CA), from `asset://<id>` of an active asset, and from one of our own download URLs; the output
is checked with Pillow and compared with the input by structural similarity (a network repaints, a copy
would not); bad references are refused at creation and unreadable images fail the task with a refund."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import trustme
from PIL import Image, ImageDraw

from tests.integration.assets.helpers import Assets, asset_server
from tests.integration.tasks import serve_calls
from tests.integration.tasks.serve_calls import balance, funded_team
from tests.support.https_origin import HttpsOrigin
from tests.support.server import RunningServer
from tests.support.ssim import ssim

STYLE = "/local/style-transfer"
PRICE_MICROS = 2000


def picture(width: int = 160, height: int = 120) -> bytes:
    image = Image.new("RGB", (width, height), (210, 225, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((15, 25, 80, 100), fill=(190, 40, 30))
    draw.ellipse((85, 10, 150, 75), fill=(40, 150, 70))
    draw.line((0, height - 10, width, 20), fill=(20, 20, 20), width=4)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("style-origin"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
def server(origin: HttpsOrigin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with asset_server(tmp_path_factory.mktemp("style-serve"), origin) as running:
        yield running


@pytest.fixture(scope="module")
def key(server: RunningServer) -> str:
    return funded_team(server, "stylists")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as c:
        yield c


async def run_task(client: httpx.AsyncClient, server: RunningServer, key: str, body: dict[str, Any]) -> dict[str, Any]:
    return await serve_calls.run_task(client, server, key, STYLE, body)


async def output(client: httpx.AsyncClient, task: dict[str, Any]) -> Image.Image:
    assert task["status"] == "success", task
    (resource,) = task["result"]["resources"]
    assert (resource["type"], resource["format"], resource["role"]) == ("image", "png", "primary")
    got = await client.get(resource["url"])
    assert got.status_code == 200 and got.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(got.content))
    assert image.format == "PNG" and image.size == (resource["width"], resource["height"])
    image.load()
    return image


async def test_https_url_is_repainted_and_charged(
    client: httpx.AsyncClient, server: RunningServer, key: str, origin: HttpsOrigin
) -> None:
    data = picture()
    url = origin.serve("photo.png", data, "image/png")
    before = await balance(client, server, key)
    task = await run_task(client, server, key, {"image_url": url, "style": 4})
    out = await output(client, task)
    source = Image.open(io.BytesIO(data))
    assert out.size == source.size == (160, 120)
    assert ssim(source, out) < 0.6  # repainted, not copied
    assert ssim(source, source.copy()) > 0.999
    after = await balance(client, server, key)
    assert round((before - after) * 1_000_000) == PRICE_MICROS

    light = await output(client, await run_task(client, server, key, {"image_url": url, "style": 4, "strength": 0.2}))
    assert ssim(source, light) > ssim(source, out)  # strength blends back towards the input


async def test_asset_reference_and_own_download_url(
    client: httpx.AsyncClient, server: RunningServer, key: str, origin: HttpsOrigin
) -> None:
    assets = Assets(client, server, key)
    url = origin.serve("asset.png", picture(320, 304), "image/png")
    reg = await assets.register({"url": url, "type": "image"})
    assert reg.status_code == 200, reg.text
    asset_id = reg.json()["data"]["asset_id"]
    assert (await assets.settle(asset_id))["status"] == "active"
    first = await output(client, await run_task(client, server, key, {"image_url": f"asset://{asset_id}"}))
    assert first.size == (320, 304)

    # The first output's own download URL is read from our store, not fetched over the network.
    own_url = (await run_task(client, server, key, {"image_url": f"asset://{asset_id}", "style": 9}))["result"][
        "resources"
    ][0]["url"]
    again = await output(client, await run_task(client, server, key, {"image_url": own_url, "style": 9}))
    assert again.size == (320, 304)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "image_url"),
        ({"image_url": "asset://asset_does_not_exist"}, "image_url"),
        ({"image_url": "asset://../etc"}, "image_url"),
        ({"image_url": "http://example.com/a.png"}, "image_url"),
        ({"image_url": "https://127.0.0.1/a.png"}, "image_url"),
        ({"image_url": "https://10.0.0.1/a.png"}, "image_url"),
        ({"image_url": "https://example.com/a.png", "style": 26}, "style"),
        ({"image_url": "https://example.com/a.png", "strength": 1.5}, "strength"),
        ({"image_url": "https://example.com/a.png", "prompt": "x"}, "prompt"),
    ],
)
async def test_bad_input_is_refused_at_creation(
    client: httpx.AsyncClient, server: RunningServer, key: str, body: dict[str, Any], param: str
) -> None:
    before = await balance(client, server, key)
    got = await client.post(server.media_url + STYLE, json=body, headers={"Authorization": f"Bearer {key}"})
    assert got.status_code == 400, got.text
    assert param in got.json()["message"]
    assert await balance(client, server, key) == before


async def test_unreadable_image_fails_and_refunds(
    client: httpx.AsyncClient, server: RunningServer, key: str, origin: HttpsOrigin
) -> None:
    url = origin.serve("not-an-image.png", b"this is text, not a picture", "image/png")
    before = await balance(client, server, key)
    task = await run_task(client, server, key, {"image_url": url})
    assert task["status"] == "failed", task
    assert task["error"]["code"] == "invalid_input" and "image_url" in task["error"]["message"]
    assert await balance(client, server, key) == before
