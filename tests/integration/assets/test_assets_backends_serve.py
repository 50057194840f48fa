"""`modelport serve` with the vendorA HTTP backend (a local fake of its API), and on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trustme

from tests.integration.assets.helpers import Assets, asset_server, make_team
from tests.support import media_make as media
from tests.support.databases import migrated_postgres_database
from tests.support.fake_vendora import API_KEY, FakeVendorA
from tests.support.https_origin import HttpsOrigin

UNAVAILABLE = {"code": 503, "message": "Service unavailable: asset provider is temporarily unavailable"}


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("origin"))
    await server.start()
    yield server
    await server.stop()


async def test_vendora_http_backend(origin: HttpsOrigin, tmp_path: Path) -> None:
    fake = FakeVendorA()
    await fake.start()
    try:
        env = {
            "MODELPORT_ASSETS__BACKEND": "http",
            "MODELPORT_ASSETS__BASE_URL": fake.base_url,
            "MODELPORT_ASSETS__API_KEY_ENV": "VENDORA_TEST_KEY",
            "VENDORA_TEST_KEY": API_KEY,
            "MODELPORT_ASSETS__RETRIES": "1",
            "MODELPORT_ASSETS__RETRY_BACKOFF_SECONDS": "0",
            "MODELPORT_ASSETS__BREAKER_FAILURES": "2",
            "MODELPORT_ASSETS__BREAKER_OPEN_SECONDS": "60",
            "MODELPORT_ASSETS__POLL_INTERVAL_SECONDS": "0.2",
        }
        with asset_server(tmp_path, origin, **env) as server:
            key = make_team(server, "vendora-team", asset_service=True)
            async with httpx.AsyncClient(timeout=60) as client:
                team = Assets(client, server, key)
                url = origin.serve("va.png", media.image(400, 400))
                reg = await team.register({"url": url, "type": "image", "name": "va"})
                assert reg.status_code == 200, reg.text
                data = reg.json()["data"]
                assert data["status"] == "processing"
                assert fake.calls[-1].fields == {"type": "image", "name": "va"}
                assert fake.calls[-1].idempotency_key == data["asset_id"]
                # Nobody asks for this asset: the background poll settles it, and the list shows it.
                for _ in range(100):
                    listed = (await team.list()).json()["data"]["assets"]
                    if listed[0]["status"] != "processing":
                        break
                    await asyncio.sleep(0.05)
                assert listed[0]["asset_id"] == data["asset_id"] and listed[0]["status"] == "active"
                assert [c.method for c in fake.calls].count("GET") >= 1

                fake.reject = True
                rejected = await team.register({"url": url, "type": "image"})
                assert rejected.status_code == 400, rejected.text
                assert rejected.json()["message"] == "Invalid parameters: asset was rejected by the provider"
                assert rejected.json()["reason"] == "content policy: rejected"
                fake.reject = False

                # Probe limits are ours too: an out-of-limit file never reaches vendorA.
                posts = len([c for c in fake.calls if c.method == "POST"])
                small = await team.register({"url": origin.serve("tiny.png", media.image(300, 400)), "type": "image"})
                assert small.status_code == 400
                assert len([c for c in fake.calls if c.method == "POST"]) == posts

                fake.fail_next = 1000
                for _ in range(2):
                    down = await team.register({"url": url, "type": "image"})
                    assert down.status_code == 503 and down.json() == UNAVAILABLE
                seen = len(fake.calls)
                fast = await team.register({"url": url, "type": "image"})  # breaker open: no call at all
                assert fast.status_code == 503 and fast.json() == UNAVAILABLE
                assert len(fake.calls) == seen
                # Polling still answers while the provider is away: the last known state.
                assert (await team.get(data["asset_id"])).json()["data"]["status"] == "active"
    finally:
        await fake.stop()


async def test_postgres_register_moderate_isolate_delete(origin: HttpsOrigin, tmp_path: Path) -> None:
    async with migrated_postgres_database() as db_url:
        with asset_server(tmp_path, origin, database_url=db_url) as server:
            key = make_team(server, "pg-assets", asset_service=True)
            other_key = make_team(server, "pg-other", asset_service=True)
            async with httpx.AsyncClient(timeout=60) as client:
                team, other = Assets(client, server, key), Assets(client, server, other_key)
                good = await team.register({"url": origin.serve("pg.mp4", media.video(850, 480, 2.0)), "type": "video"})
                cut_url = origin.serve("pg-cut.mp4", media.truncated(media.video(850, 480, 4.0), 0.6))
                cut = await team.register({"url": cut_url, "type": "video"})
                assert good.status_code == cut.status_code == 200
                good_id, cut_id = good.json()["data"]["asset_id"], cut.json()["data"]["asset_id"]
                assert (await team.settle(good_id))["status"] == "active"
                assert (await team.settle(cut_id))["status"] == "failed"
                listing = (await team.list()).json()["data"]
                assert listing["total"] == 2 and [a["asset_id"] for a in listing["assets"]] == [cut_id, good_id]
                assert (await other.get(good_id)).status_code == 404
                assert (await other.list()).json()["data"]["total"] == 0
                # NUL bytes never reach PostgreSQL (it refuses them in text): clean 4xx answers instead.
                assert (await team.get("a%00b")).status_code in (400, 404)
                nul_name = await team.register({"url": cut_url, "type": "video", "name": "a\u0000b"})
                assert nul_name.status_code == 400, nul_name.text
                assert (await team.delete(good_id)).status_code == 200
                assert (await team.list()).json()["data"]["total"] == 1
