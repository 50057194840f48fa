"""Concurrency limit (429 + Retry-After) and cancelling, on a `serve --no-workers` where tasks stay queued."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.tasks.helpers import (
    PRICE_MICROS,
    WebhookReceiver,
    create,
    free_port,
    make_team,
    task_env,
    task_server,
)
from tests.support.server import RunningServer


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, receiver: WebhookReceiver) -> Iterator[RunningServer]:
    env = task_env(receiver, free_port())
    with task_server(tmp_path_factory.mktemp("tasks-limits"), env, "--no-workers") as running:
        yield running


def test_tier_limit_is_429_with_retry_after_and_cancel_frees_a_slot(
    server: RunningServer, receiver: WebhookReceiver
) -> None:
    team = make_team(server, "limited", topup_usd="5")  # the free tier: 2 unfinished tasks
    first = [create(server, team, {"prompt": f"p{i}"}, webhook=receiver.url("/c")) for i in range(2)]
    assert [r.status_code for r in first] == [200, 200]
    over = create(server, team, {"prompt": "one too many"})
    assert over.status_code == 429, over.text
    assert over.json()["code"] == 429 and over.json()["message"].startswith("Request limited: ")
    assert int(over.headers["retry-after"]) > 0

    before = httpx.get(server.media_url + "/api/v1/team/balance", headers=team.headers).json()["data"]
    assert round(before["frozen_balance"] * 1_000_000) == 2 * PRICE_MICROS
    task_id = first[0].json()["data"]["task_id"]
    cancelled = httpx.post(f"{server.media_url}/api/v1/tasks/{task_id}/cancel", headers=team.headers)
    assert cancelled.status_code == 200 and cancelled.json()["data"]["status"] == "cancelled"
    assert cancelled.json()["data"]["error"]["code"] == "cancelled"
    again = httpx.post(f"{server.media_url}/api/v1/tasks/{task_id}/cancel", headers=team.headers)
    assert again.status_code == 409 and again.json()["code"] == 409
    after = httpx.get(server.media_url + "/api/v1/team/balance", headers=team.headers).json()["data"]
    assert round(after["frozen_balance"] * 1_000_000) == PRICE_MICROS
    assert round((after["available_balance"] - before["available_balance"]) * 1_000_000) == PRICE_MICROS
    assert create(server, team, {"prompt": "fits again"}).status_code == 200

    # No workers here, so the cancelled event waits in the outbox: visible, pending, not yet attempted.
    hooks = httpx.get(f"{server.media_url}/api/v1/tasks/{task_id}/webhooks", headers=team.headers).json()["data"]
    assert hooks["deliveries"][0]["event_type"] == "task.cancelled" and hooks["deliveries"][0]["status"] == "pending"
    assert receiver.received == []


def test_queued_tasks_wait_for_a_worker(server: RunningServer) -> None:
    team = make_team(server, "waiting", topup_usd="5")
    task_id = create(server, team, {"prompt": "x"}).json()["data"]["task_id"]
    got = httpx.get(f"{server.media_url}/api/v1/tasks/{task_id}", headers=team.headers).json()["data"]
    assert got["status"] == "queued" and got["result"]["resources"] == [] and got["duration"] is None
