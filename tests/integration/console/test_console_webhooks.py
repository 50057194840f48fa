"""Redelivering a task's webhook from the console, through a real `modelport serve` and a local HTTPS
receiver: the delivered event is sent again (same webhook-id), and only the task's own team can ask."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from tests.support.https_origin import HttpsOrigin
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "console-webhooks-admin-token-0123456789"


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("hook-origin"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
def server(origin: HttpsOrigin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        "MODELPORT_NET__ALLOW_HOSTS": f"localhost:{origin.port}",
        "MODELPORT_NET__CA_BUNDLE": str(origin.ca_file),
        "MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE": "1000",
    }
    with run_server(tmp_path_factory.mktemp("hook-serve"), env=env) as running:
        yield running


def team_key(server: RunningServer, name: str) -> str:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    base = server.media_url + "/admin/v1"
    assert httpx.post(f"{base}/teams", json={"name": name}, headers=headers).status_code == 200
    assert httpx.post(f"{base}/teams/{name}/topups", json={"amount_usd": "1"}, headers=headers).status_code == 200
    key: str = httpx.post(f"{base}/teams/{name}/keys", json={}, headers=headers).json()["data"]["key"]
    return key


async def until(check: Any, what: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


async def console_client(server: RunningServer, key: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=server.media_url + "/console", timeout=30)
    page = (await client.get("/sign-in")).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token is not None
    assert (await client.post("/sign-in", data={"api_key": key, "csrf_token": token.group(1)})).status_code == 303
    return client


def csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


async def test_redeliver_a_stopped_webhook(server: RunningServer, origin: HttpsOrigin, tmp_path: Path) -> None:
    key, other_key = team_key(server, "hooks-a"), team_key(server, "hooks-b")
    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(timeout=30) as api:
        created = await api.post(
            server.media_url + "/local/sketch-image",
            json={"prompt": "a harbour", "width": 96, "height": 64},
            headers={**auth, "X-Webhook-URL": f"{origin.base}/hook"},
        )
        assert created.status_code == 200, created.text
        task_id = created.json()["data"]["task_id"]

        async def deliveries() -> list[dict[str, Any]] | None:
            r = await api.get(f"{server.media_url}/api/v1/tasks/{task_id}/webhooks", headers=auth)
            found: list[dict[str, Any]] = r.json()["data"]["deliveries"]
            return found if found and found[0]["status"] == "delivered" else None

        (first,) = await until(deliveries, "the webhook to be delivered")
        assert first["attempt_count"] == 1

        async def redelivered() -> bool:
            r = await api.get(f"{server.media_url}/api/v1/tasks/{task_id}/webhooks", headers=auth)
            (delivery,) = r.json()["data"]["deliveries"]
            return bool(delivery["status"] == "delivered" and delivery["attempt_count"] == 2)

    a = await console_client(server, key)
    b = await console_client(server, other_key)
    try:
        page = await a.get(f"/tasks/{task_id}")
        assert page.status_code == 200 and first["webhook_id"] in page.text and "Redeliver" in page.text
        action = f"/tasks/{task_id}/webhooks/{first['webhook_id']}/redeliver"
        # Another team: the task does not exist for it.
        refused = await b.post(action, data={"csrf_token": csrf((await b.get("/tasks")).text)})
        assert refused.status_code == 404
        # No CSRF token: refused.
        assert (await a.post(action)).status_code == 403
        done = await a.post(action, data={"csrf_token": csrf(page.text)})
        assert done.status_code == 303 and done.headers["location"].endswith(f"?redelivered={first['webhook_id']}")

        async with httpx.AsyncClient(timeout=30) as api:
            await until(redelivered, "the second delivery")
        shown = (await a.get(f"/tasks/{task_id}")).text
        assert "after 2 attempt(s)" in shown and "<td>2</td>" in shown
        hooks = [r for r in origin.requests if r.path == "/hook"]
        assert len(hooks) == 2
        assert hooks[0].headers["webhook-id"] == hooks[1].headers["webhook-id"] == first["webhook_id"]
    finally:
        await a.aclose()
        await b.aclose()
