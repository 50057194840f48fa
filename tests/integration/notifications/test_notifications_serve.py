"""Team notifications end to end: two `modelport serve` processes on one PostgreSQL database, media tasks that
move the money through both, and a local receiver that verifies every signature with `standardwebhooks`.

The receiver answers 500 to the first attempt of every event and 200 to the next, so each event is retried
once. Each event is delivered exactly once per crossing whichever process settled or refused, and not again
until a new crossing: `balance.low` once per fall below the threshold (armed again by a top-up),
`balance.exhausted` once per 402 run since the last top-up, `key.spend_threshold` once per percent and
period, `key.expiring` once per key (both processes' reconcilers look).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from standardwebhooks.webhooks import Webhook

from tests.integration.tasks.helpers import (
    Received,
    Team,
    WebhookReceiver,
    admin,
    create,
    free_port,
    make_team,
    task_env,
    task_server,
    wait_ended,
    wait_for,
)
from tests.support.databases import migrated_postgres_database
from tests.support.server import RunningServer

IMAGE = {"prompt": "a lighthouse", "width": 256, "height": 256}  # local/sketch-image: 0.002 USD


def test_each_event_once_per_crossing_across_two_processes(tmp_path: Path) -> None:
    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_scenario, tmp_path, database_url)

    asyncio.run(run())


def _key(server: RunningServer, team: Team, fields: dict[str, Any]) -> Team:
    made = admin(server, "POST", f"/teams/{team.name}/keys", fields)
    return Team(id=team.id, name=team.name, key=made["key"])


def _task(server: RunningServer, key: Team) -> None:
    got = create(server, key, IMAGE)
    assert got.status_code == 200, got.text
    task_id = got.json()["data"]["task_id"]
    assert wait_ended(server.media_url, key, [task_id])[task_id]["status"] == "success"


def _delivered(receiver: WebhookReceiver, secret: str) -> list[dict[str, Any]]:
    """Every event answered 2xx, after checking the signature of every request that arrived."""
    with receiver._lock:
        items: list[Received] = list(receiver.received)
    out = []
    for item in items:
        event: dict[str, Any] = Webhook(secret).verify(item.body, item.headers)  # raises on a bad signature
        if 200 <= item.status < 300:
            out.append({**event, "_id": item.headers["webhook-id"]})
    return out


def _of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def _scenario(tmp_path: Path, database_url: str) -> None:
    receiver = WebhookReceiver()
    # The first attempt of every event fails; the retry succeeds.
    receiver.answer = lambda _path, n: (500, {}) if n == 1 else (200, {})
    with receiver.running(), ExitStack() as stack:
        shared = {
            "MODELPORT_DATABASE_URL": database_url,
            "MODELPORT_SECRET_KEY": "notifications-test-" + secrets.token_hex(16),
            "MODELPORT_TASKS__KEY_EXPIRY_CHECK_SECONDS": "0.5",
        }
        envs = [task_env(receiver, free_port(), **shared) for _ in range(2)]
        a, b = (stack.enter_context(task_server(tmp_path / f"s{i}", env)) for i, env in enumerate(envs))

        team = make_team(a, "notified", topup_usd="0.01")  # 5 images
        boss = _key(a, team, {"role": "admin"})
        limited = _key(a, team, {"spend_limit_usd": 0.006, "spend_limit_period": "month"})  # 3 images
        soon = _key(a, team, {"expires_at": int(time.time()) + 3600})
        _key(a, team, {"expires_at": int(time.time()) + 3 * 86400})  # outside the window: never notified
        secret = httpx.get(f"{a.media_url}/api/v1/webhooks/secret", headers=boss.headers, timeout=30).json()["data"]
        secret = secret["secret"]

        settings = {
            "url": receiver.url(),
            "balance_below_usd": "0.005",
            "key_spend_percent": [50, 100],
            "key_expiry_days": 1,
        }
        put = httpx.put(f"{b.media_url}/api/v1/notifications", json=settings, headers=boss.headers, timeout=30)
        assert put.status_code == 200, put.text
        got = httpx.get(f"{a.media_url}/api/v1/notifications", headers=boss.headers, timeout=30).json()["data"]
        assert got == {**settings, "balance_below_usd": "0.0050"}

        # key.expiring: the key within a day, once, though both processes' reconcilers check twice a second.
        wait_for(lambda: len(_of(_delivered(receiver, secret), "key.expiring")) == 1, 60, "key.expiring")
        (expiring,) = _of(_delivered(receiver, secret), "key.expiring")
        assert expiring["data"]["key_prefix"] == soon.key[: len(expiring["data"]["key_prefix"])]
        assert expiring["data"]["team_id"] == team.id

        # Three images on the limited key, alternating servers: 50 % after the second, 100 % after the third;
        # the third also takes the balance from 0.006 to 0.004 USD, below 0.005: balance.low.
        _task(a, limited)
        _task(b, limited)
        wait_for(lambda: len(_of(_delivered(receiver, secret), "key.spend_threshold")) == 1, 60, "50 %")
        assert not _of(_delivered(receiver, secret), "balance.low")
        _task(a, limited)
        wait_for(lambda: len(_of(_delivered(receiver, secret), "key.spend_threshold")) == 2, 60, "100 %")
        wait_for(lambda: len(_of(_delivered(receiver, secret), "balance.low")) == 1, 60, "balance.low")
        spend = _of(_delivered(receiver, secret), "key.spend_threshold")
        assert sorted(e["data"]["percent"] for e in spend) == [50, 100]
        assert {e["data"]["spent_usd"] for e in spend} == {"0.0040", "0.0060"}
        (low,) = _of(_delivered(receiver, secret), "balance.low")
        assert low["data"]["balance_usd"] == "0.0040" and low["data"]["threshold_usd"] == "0.0050"

        # Two more images on another key spend the rest without a new crossing; then 402s on both servers.
        _task(b, boss)
        _task(a, boss)
        for server in (a, b, a, b):
            assert create(server, boss, IMAGE).status_code == 402
        wait_for(lambda: len(_of(_delivered(receiver, secret), "balance.exhausted")) == 1, 60, "balance.exhausted")

        # A top-up arms both balance events again; spending below the threshold again sends balance.low again.
        admin(b, "POST", f"/teams/{team.name}/topups", {"amount_usd": "0.006"})
        _task(b, boss)
        _task(a, boss)
        wait_for(lambda: len(_of(_delivered(receiver, secret), "balance.low")) == 2, 60, "the second balance.low")

        # The test event, then a quiet moment: nothing else may arrive.
        sent = httpx.post(f"{a.media_url}/api/v1/notifications/test", headers=boss.headers, timeout=30)
        assert sent.status_code == 200, sent.text
        wait_for(lambda: len(_of(_delivered(receiver, secret), "notification.test")) == 1, 60, "notification.test")
        time.sleep(3)
        events = _delivered(receiver, secret)
        counts = {kind: len(_of(events, kind)) for kind in {e["type"] for e in events}}
        assert counts == {
            "key.expiring": 1,
            "key.spend_threshold": 2,
            "balance.low": 2,
            "balance.exhausted": 1,
            "notification.test": 1,
        }, counts
        # Every event was tried twice (500, then 200) under one webhook-id, and delivered once.
        with receiver._lock:
            per_id: dict[str, list[int]] = {}
            for item in receiver.received:
                per_id.setdefault(item.headers["webhook-id"], []).append(item.status)
        assert sorted(per_id) == sorted(e["_id"] for e in events)
        assert all(statuses == [500, 200] for statuses in per_id.values()), per_id

        # The deliveries page lists each with its two attempts, newest first, paged.
        listed: list[dict[str, Any]] = []
        before: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 3, **({"before_id": before} if before else {})}
            page = httpx.get(
                f"{b.media_url}/api/v1/notifications/deliveries", params=params, headers=boss.headers, timeout=30
            )
            assert page.status_code == 200, page.text
            listed += page.json()["data"]["deliveries"]
            before = page.json()["data"]["next_before_id"]
            if before is None:
                break
        assert sorted(d["webhook_id"] for d in listed) == sorted(per_id)
        assert [d["created_at"] for d in listed] == sorted((d["created_at"] for d in listed), reverse=True)
        for d in listed:
            assert d["status"] == "delivered" and [x["outcome"] for x in d["attempts"]] == ["failed", "delivered"]
            assert d["payload"]["type"] == d["event_type"]
        assert json.dumps(listed).count(secret) == 0
