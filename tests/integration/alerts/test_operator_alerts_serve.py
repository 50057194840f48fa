"""Operator alerts through real `modelport serve` processes sharing one PostgreSQL database, delivered to a
local receiver that checks every signature with the `standardwebhooks` library:

- a deployment on a failing upstream goes into cooldown in both processes: one `deployment.down`; the
  upstream recovers and both processes serve again: one `deployment.up`; every event's first attempt is
  answered 500, and it arrives again (same `webhook-id`) and is delivered;
- two `serve --no-workers` processes (no worker, so a task stays queued): one `tasks.backlog` and one
  `storage.low` (a free-space threshold above the disk's), written to the outbox; a `modelport worker` then
  runs the task and sends them, and the backlog's end is reported once (`tasks.backlog.resolved`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select
from standardwebhooks.webhooks import Webhook

from modelport.alerts.tables import operator_alert_state
from modelport.storage.db import create_engine
from modelport.webhooks.tables import webhook_attempts, webhook_deliveries
from tests.integration.tasks.helpers import (
    Received,
    Team,
    WebhookReceiver,
    admin,
    create,
    free_port,
    make_team,
    reap,
    start_worker,
    task_env,
    wait_ended,
    wait_for,
)
from tests.support.catalogs import shipped_with_fake_chat
from tests.support.databases import migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream, Reply
from tests.support.server import RunningServer, run_server, server_env

OPERATOR_SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
SECRET_KEY = "operator-alerts-test-secret-key-0123456789"
HOOK_PATH = "/operator"
SETTLE_SECONDS = 3.0  # after the last change both processes could report, time for a duplicate to show


def events(receiver: WebhookReceiver, event_type: str) -> list[tuple[Received, dict[str, Any]]]:
    """Every request of that type that reached the operator's path, its signature verified."""
    out = []
    for got in list(receiver.received):
        body = Webhook(OPERATOR_SECRET).verify(got.body, got.headers)  # raises on a bad signature
        if body["type"] == event_type:
            out.append((got, body))
    return out


def delivered(receiver: WebhookReceiver, event_type: str) -> list[dict[str, Any]]:
    return [body for got, body in events(receiver, event_type) if 200 <= got.status < 300]


def outbox_rows(database_url: str, event_type: str) -> list[tuple[Any, list[str]]]:
    """The outbox rows of that type, each with its attempts' outcomes in order."""

    async def read() -> list[tuple[Any, list[str]]]:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as conn:
                rows = await conn.execute(
                    select(webhook_deliveries).where(webhook_deliveries.c.event_type == event_type)
                )
                found = []
                for row in rows.all():
                    attempts = await conn.execute(
                        select(webhook_attempts.c.outcome)
                        .where(webhook_attempts.c.delivery_id == row.id)
                        .order_by(webhook_attempts.c.attempt)
                    )
                    found.append((row, list(attempts.scalars())))
                return found
        finally:
            await engine.dispose()

    return asyncio.run(read())


def alert_state(database_url: str) -> dict[str, bool]:
    async def read() -> dict[str, bool]:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as conn:
                rows = (await conn.execute(select(operator_alert_state))).all()
            return {r.key: bool(r.alerting) for r in rows}
        finally:
            await engine.dispose()

    return asyncio.run(read())


def alert_env(receiver: WebhookReceiver, database_url: str, **extra: str) -> dict[str, str]:
    return task_env(
        receiver,
        free_port(),
        MODELPORT_DATABASE_URL=database_url,
        MODELPORT_SECRET_KEY=SECRET_KEY,
        MODELPORT_OPERATOR_WEBHOOK_URL=receiver.url(HOOK_PATH),
        MODELPORT_OPERATOR_WEBHOOK_SECRET=OPERATOR_SECRET,
        MODELPORT_ALERTS__CHECK_INTERVAL_SECONDS="0.5",
        **extra,
    )


@contextmanager
def alert_server(data_dir: Path, env: dict[str, str], *args: str) -> Iterator[RunningServer]:
    """`serve` on the env's public port, with a start-up deadline for a loaded machine."""
    port = env["MODELPORT_PUBLIC_MEDIA_URL"].rsplit(":", 1)[1]
    with run_server(data_dir, "--media-port", port, *args, env=env, startup_timeout=240) as running:
        yield running


def chat(server: RunningServer, team: Team) -> httpx.Response:
    return httpx.post(
        f"{server.text_url}/v1/chat/completions",
        json={"model": "fake/chat", "messages": [{"role": "user", "content": "hi"}]},
        headers=team.headers,
        timeout=30,
    )


def cool_down(server: RunningServer, team: Team) -> None:
    """Ask until the process has taken the deployment out of rotation (no deployment left to try)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = chat(server, team)
        if "temporarily unavailable" in got.text:
            return
        assert got.status_code >= 500, got.text  # the upstream's failure, passed on
    raise AssertionError("no cooldown")


def until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    wait_for(condition, timeout=timeout, what=what)


def test_deployment_down_and_up_once_across_two_processes_and_retried(tmp_path: Path) -> None:
    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_deployment_down_and_up, tmp_path, database_url)

    asyncio.run(run())


def _deployment_down_and_up(tmp_path: Path, database_url: str) -> None:
    with ExitStack() as stack:
        receiver = stack.enter_context(WebhookReceiver().running())
        # Every event's first attempt fails: each must come again with its webhook-id and then be delivered.
        receiver.answer = lambda _path, n: (500, {}) if n == 1 else (204, {})
        upstream = stack.enter_context(FakeUpstream(Reply.error(500, "upstream exploded")))
        catalog = tmp_path / "catalog.toml"
        catalog.write_text(shipped_with_fake_chat(upstream.base_url))
        shared = {
            "MODELPORT_CATALOG": str(catalog),
            "FAKE_KEY": "sk-fake",
            "MODELPORT_UPSTREAM_COOLDOWN_SECONDS": "2",
            # Nothing else to report here: no backlog, storage bounds off.
            "MODELPORT_ALERTS__TASK_BACKLOG_SECONDS": "3600",
            "MODELPORT_ALERTS__STORAGE_FREE_BYTES": "0",
            "MODELPORT_ALERTS__STORAGE_FREE_PERCENT": "0",
        }
        envs = [alert_env(receiver, database_url, **shared) for _ in range(2)]
        servers = [stack.enter_context(alert_server(tmp_path / f"s{i}", env)) for i, env in enumerate(envs)]

        # Both processes see the failures and take the deployment out of rotation (no deployment left to try).
        team = make_team(servers[0], "chatty", topup_usd="10")
        for server in servers:
            cool_down(server, team)
        until(lambda: len(delivered(receiver, "deployment.down")) == 1, "deployment.down delivered")
        time.sleep(SETTLE_SECONDS)
        (first, retry) = events(receiver, "deployment.down")  # one event, its failed attempt and its retry
        assert first[0].headers["webhook-id"] == retry[0].headers["webhook-id"]
        assert (first[0].status, retry[0].status) == (500, 204)
        down = retry[1]["data"]
        assert down["deployment"] == "fake/chat#0" and down["model"] == "fake/chat" and down["provider"] == "fake"
        assert down["consecutive_failures"] >= 3 and down["cooldown_seconds"] == 2
        assert down["last_error"]  # what the upstream answered
        ((row, outcomes),) = outbox_rows(database_url, "deployment.down")
        assert row.status == "delivered" and row.attempts == 2 and row.task_id is None and row.team_id is None
        assert outcomes == ["failed", "delivered"]
        assert alert_state(database_url) == {"deployment:fake/chat#0": True}

        # The upstream recovers: after the cooldown each process serves again; one deployment.up.
        upstream.set_default(Reply.text("hello"))
        for server in servers:
            until(lambda s=server: chat(s, team).status_code == 200, "the deployment serving again")  # type: ignore[misc]
        until(lambda: len(delivered(receiver, "deployment.up")) == 1, "deployment.up delivered")
        time.sleep(SETTLE_SECONDS)
        assert len(events(receiver, "deployment.up")) == 2  # the failed attempt and its retry
        assert len(events(receiver, "deployment.down")) == 2  # nothing new
        ((row, outcomes),) = outbox_rows(database_url, "deployment.up")
        assert (
            outcomes == ["failed", "delivered"]
            and row.status == "delivered"
            and json.loads(row.payload)["data"]["deployment"] == "fake/chat#0"
        )
        assert alert_state(database_url) == {"deployment:fake/chat#0": False}

        # The admin API shows the state and both events with their attempts (the URL without its path).
        view = admin(servers[1], "GET", "/alerts?limit=10")
        assert view["enabled"] is True and view["url"] == f"http://{receiver.host}/…"
        assert [(s["key"], s["alerting"]) for s in view["states"]] == [("deployment:fake/chat#0", False)]
        shown = [(d["event_type"], d["status"], [a["outcome"] for a in d["attempts"]]) for d in view["deliveries"]]
        both_attempts = ["failed", "delivered"]
        assert shown == [("deployment.up", "delivered", both_attempts), ("deployment.down", "delivered", both_attempts)]
        assert view["deliveries"][1]["payload"]["data"]["deployment"] == "fake/chat#0"
        assert view["deliveries"][1]["attempts"][0]["status_code"] == 500
        assert view["states"][0]["webhook_id"] == view["deliveries"][0]["webhook_id"]
        assert all("url" not in d for d in view["deliveries"])  # the hook URL is shown only without its path


def test_backlog_and_low_storage_once_then_sent_by_a_worker(tmp_path: Path) -> None:
    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_backlog_and_storage, tmp_path, database_url)

    asyncio.run(run())


def _backlog_and_storage(tmp_path: Path, database_url: str) -> None:
    with ExitStack() as stack:
        receiver = stack.enter_context(WebhookReceiver().running())
        shared = {
            "MODELPORT_ALERTS__TASK_BACKLOG_SECONDS": "1",
            # Free space is always below 100 % of the disk: storage is low from the first check.
            "MODELPORT_ALERTS__STORAGE_FREE_BYTES": "0",
            "MODELPORT_ALERTS__STORAGE_FREE_PERCENT": "100",
        }
        envs = [alert_env(receiver, database_url, **shared) for _ in range(2)]
        data_dir = tmp_path / "data"  # one data directory (one disk, one storage alert) for every process
        servers = [stack.enter_context(alert_server(data_dir, env, "--no-workers")) for env in envs]

        until(lambda: len(outbox_rows(database_url, "storage.low")) == 1, "storage.low in the outbox")
        team = make_team(servers[0], "backlog", topup_usd="1")
        got = create(servers[1], team, {"prompt": "waits for a worker", "width": 64, "height": 64})
        assert got.status_code == 200, got.text
        task_id = got.json()["data"]["task_id"]
        until(lambda: len(outbox_rows(database_url, "tasks.backlog")) == 1, "tasks.backlog in the outbox")
        time.sleep(SETTLE_SECONDS)  # both processes keep checking: still one row each
        ((backlog_row, _),) = outbox_rows(database_url, "tasks.backlog")
        assert len(outbox_rows(database_url, "storage.low")) == 1
        assert backlog_row.status == "pending" and receiver.received == []  # no sender in --no-workers processes
        backlog = json.loads(backlog_row.payload)["data"]
        assert backlog["oldest_task_id"] == task_id and backlog["queued"] == 1 and backlog["threshold_seconds"] == 1
        assert backlog["oldest_queued_seconds"] >= 1

        # A worker runs the task and sends what waits in the outbox; the backlog's end is reported once.
        worker = start_worker(data_dir, envs[0])
        try:
            wait_ended(servers[0].media_url, team, [task_id], timeout=120)
            until(lambda: len(delivered(receiver, "tasks.backlog.resolved")) == 1, "tasks.backlog.resolved")
            until(lambda: len(delivered(receiver, "tasks.backlog")) == 1, "tasks.backlog delivered")
            until(lambda: len(delivered(receiver, "storage.low")) == 1, "storage.low delivered")
            time.sleep(SETTLE_SECONDS)
        finally:
            worker.send_signal(signal.SIGTERM)
            reap(worker)
        for event_type in ("tasks.backlog", "tasks.backlog.resolved", "storage.low"):
            assert len(events(receiver, event_type)) == 1, event_type
            assert len(outbox_rows(database_url, event_type)) == 1, event_type
        (storage,) = delivered(receiver, "storage.low")
        assert storage["data"]["path"] == str(data_dir.resolve()) and storage["data"]["threshold_percent"] == 100
        assert 0 < storage["data"]["free_bytes"] <= storage["data"]["total_bytes"]
        (resolved,) = delivered(receiver, "tasks.backlog.resolved")
        assert resolved["data"]["queued"] == 0
        state = alert_state(database_url)
        assert state["tasks.backlog"] is False and [v for k, v in state.items() if k.startswith("storage:")] == [True]


def test_serve_refuses_an_operator_url_webhooks_could_not_use(tmp_path: Path) -> None:
    env = server_env(
        tmp_path,
        MODELPORT_OPERATOR_WEBHOOK_URL="https://192.168.1.20/hook",
        MODELPORT_OPERATOR_WEBHOOK_SECRET=OPERATOR_SECRET,
    )
    started = subprocess.run(
        [sys.executable, "-m", "modelport", "serve", "--media-port", "0", "--text-port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode != 0
    assert "MODELPORT_OPERATOR_WEBHOOK_URL is refused" in started.stderr and "private" in started.stderr
    assert OPERATOR_SECRET not in started.stderr + started.stdout


def test_low_storage_on_sqlite_once_across_two_workers(tmp_path: Path) -> None:
    """The embedded default: SQLite and the local file store in the data directory, `serve --workers 2`."""
    with WebhookReceiver().running() as receiver:
        env = task_env(
            receiver,
            free_port(),
            MODELPORT_OPERATOR_WEBHOOK_URL=receiver.url(HOOK_PATH),
            MODELPORT_OPERATOR_WEBHOOK_SECRET=OPERATOR_SECRET,
            MODELPORT_ALERTS__CHECK_INTERVAL_SECONDS="0.3",
            MODELPORT_ALERTS__STORAGE_FREE_BYTES=str(2**62),  # more than any disk has free
            MODELPORT_ALERTS__STORAGE_FREE_PERCENT="0",
        )
        with alert_server(tmp_path, env, "--workers", "2"):
            until(lambda: len(delivered(receiver, "storage.low")) == 1, "storage.low delivered")
            time.sleep(SETTLE_SECONDS)  # both workers keep checking
            assert len(events(receiver, "storage.low")) == 1 and not events(receiver, "storage.low.resolved")
            (low,) = delivered(receiver, "storage.low")
            assert low["data"]["path"] == str(tmp_path.resolve()) and low["data"]["threshold_bytes"] == 2**62
            assert low["data"]["free_bytes"] < 2**62 and low["data"]["threshold_percent"] == 0
