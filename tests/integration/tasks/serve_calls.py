"""Calls the media-model tests make against a real `modelport serve`: fund a team, read its balance, run a
task to its end. One copy, with deadlines generous enough for a loaded machine (a wait, free when passing)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from tests.integration.assets.helpers import ADMIN_TOKEN, make_team
from tests.support.server import RunningServer

TERMINAL = ("success", "failed", "cancelled")


def funded_team(server: RunningServer, name: str, usd: str = "10") -> str:
    """A team with the asset service on and `usd` of balance; returns its key."""
    key = make_team(server, name, asset_service=True)
    got = httpx.post(
        f"{server.media_url}/admin/v1/teams/{name}/topups",
        json={"amount_usd": usd},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=30,
    )
    assert got.status_code == 200, got.text
    return key


async def balance(client: httpx.AsyncClient, server: RunningServer, key: str) -> float:
    got = await client.get(server.media_url + "/api/v1/team/balance", headers={"Authorization": f"Bearer {key}"})
    value: float = got.json()["data"]["available_balance"]
    return value


async def run_task(
    client: httpx.AsyncClient, server: RunningServer, key: str, path: str, body: dict[str, Any], wait: float = 240
) -> dict[str, Any]:
    """Create a task at `path` (`/<provider>/<model>`) and poll it until it ends."""
    headers = {"Authorization": f"Bearer {key}"}
    created = await client.post(server.media_url + path, json=body, headers=headers)
    assert created.status_code == 200, created.text
    task_id = created.json()["data"]["task_id"]
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        got = await client.get(f"{server.media_url}/api/v1/tasks/{task_id}", headers=headers)
        data: dict[str, Any] = got.json()["data"]
        if data["status"] in TERMINAL:
            return data
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id} did not end in {wait} s")
