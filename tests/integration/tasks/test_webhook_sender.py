"""The webhook sender's delivery rules against a real local receiver (SQLite outbox, the real fetcher)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from standardwebhooks.webhooks import Webhook

from modelport.accounts import service as accounts
from modelport.billing.ledger import topup
from modelport.clock import now_ms
from modelport.media.tasks.events import Event
from modelport.media.tasks.rows import NewTask
from modelport.media.tasks.states import TaskStatus
from modelport.net import SafeFetcher
from modelport.net.retry_after import retry_after_seconds
from modelport.settings import NetSettings, WebhookSettings
from modelport.webhooks import outbox
from modelport.webhooks import secrets as team_secrets
from modelport.webhooks.secret_box import secret_box
from modelport.webhooks.sender import WebhookSender
from modelport.webhooks.tables import webhook_deliveries
from tests.integration.tasks.helpers import WebhookReceiver
from tests.support.databases import migrated_engine
from tests.support.task_rows import task_transitions


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_engine("sqlite", tmp_path) as eng:
        yield eng


async def failed_task_with_webhook(engine: AsyncEngine, url: str, give_up_ms: int = 3_600_000) -> tuple[str, str]:
    """A new funded team with one failed task whose webhook is due: (team id, delivery id)."""
    team = await accounts.create_team(engine, "hooks-" + secrets.token_hex(3), tier="free")
    await topup(engine, team.id, 10_000)
    return team.id, await failed_task_for_team(engine, team.id, url, give_up_ms)


async def failed_task_for_team(engine: AsyncEngine, team_id: str, url: str, give_up_ms: int = 3_600_000) -> str:
    """One failed task with a webhook for an existing team; its delivery id."""
    now = now_ms()
    task = NewTask(
        id="task_" + secrets.token_hex(16),
        team_id=team_id,
        model_id="local/sketch-image",
        input={"prompt": "x"},
        seed=1,
        price_micros=100,
        webhook_url=url,
        deadline_ms=now + 60_000,
        created_at_ms=now,
    )
    event_id = "msg_" + secrets.token_hex(8)
    moves = task_transitions(
        engine,
        lambda t: Event(
            event_id,
            "task.failed",
            json.dumps({"type": "task.failed", "data": {"task_id": t.id}}),
            now_ms() + give_up_ms,
        ),
    )
    await moves.create(task, max_unfinished=50)
    ended = await moves.finish_failure(task.id, status=TaskStatus.FAILED, code="x", message="boom")
    assert ended is not None
    return event_id


BOX = secret_box("webhook-sender-test-secret-key")
# Fetchers made by `sender()` (the sender does not own its fetcher: in a server it is a shared service),
# closed after each test by `close_fetchers`, or their aiohttp sessions are reported unclosed.
_FETCHERS: list[SafeFetcher] = []


async def close_fetchers() -> None:
    while _FETCHERS:
        await _FETCHERS.pop().aclose()


@pytest.fixture(autouse=True)
async def _fetchers_closed() -> AsyncIterator[None]:
    yield
    await close_fetchers()


def sender(engine: AsyncEngine, receiver: WebhookReceiver, **settings: object) -> WebhookSender:
    fetcher = SafeFetcher(NetSettings(allow_hosts=receiver.host))
    _FETCHERS.append(fetcher)
    options: dict[str, object] = {"schedule_seconds": [0, 0.2, 0.2], "jitter_fraction": 0, "timeout_seconds": 1.0}
    options.update(settings)
    return WebhookSender(engine, fetcher, WebhookSettings.model_validate(options), BOX)


async def deliver_due(s: WebhookSender, engine: AsyncEngine, event_id: str) -> outbox.Delivery:
    claimed = await outbox.claim(engine, event_id, claim_ms=5000)
    assert claimed is not None
    await s.deliver(claimed)
    async with engine.connect() as conn:
        row = (await conn.execute(select(webhook_deliveries).where(webhook_deliveries.c.id == event_id))).one()
    return outbox._delivery(row)


def task_of(row: outbox.Delivery) -> str:
    assert row.task_id is not None  # a task's delivery
    return row.task_id


async def test_2xx_delivers_signed(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:
        team_id, event_id = await failed_task_with_webhook(engine, receiver.url())
        row = await deliver_due(sender(engine, receiver), engine, event_id)
        assert row.status == "delivered" and row.attempts == 1
        (got,) = receiver.received
        secret = (await team_secrets.get_or_create(engine, BOX, team_id)).secret
        assert Webhook(secret).verify(got.body, got.headers)["type"] == "task.failed"
        assert got.headers["webhook-id"] == event_id


async def test_3xx_is_a_failure_and_not_followed(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:
        receiver.answer = lambda path, n: (302, {"Location": "/elsewhere"}) if path == "/hook" else (204, {})
        _, event_id = await failed_task_with_webhook(engine, receiver.url())
        s = sender(engine, receiver)
        row = await deliver_due(s, engine, event_id)
        assert row.status == "pending" and row.attempts == 1
        assert [r.headers.get("webhook-id") for r in receiver.received] == [event_id]  # /elsewhere never asked
        (log,) = await outbox.for_task(engine, task_of(row))
        assert log["attempts"][0]["status_code"] == 302 and "redirects are not followed" in log["attempts"][0]["error"]


async def test_410_stops_at_once(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:
        receiver.answer = lambda path, n: (410, {})
        _, event_id = await failed_task_with_webhook(engine, receiver.url())
        row = await deliver_due(sender(engine, receiver), engine, event_id)
        assert row.status == "stopped"
        assert await outbox.due(engine, limit=10) == []


async def test_429_retry_after_is_honoured_then_schedule_runs_out(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:
        receiver.answer = lambda path, n: (429, {"Retry-After": "30"})
        _, event_id = await failed_task_with_webhook(engine, receiver.url())
        s = sender(engine, receiver)
        before = now_ms()
        row = await deliver_due(s, engine, event_id)
        assert row.status == "pending" and row.next_attempt_at_ms >= before + 30_000
        (log,) = await outbox.for_task(engine, task_of(row))
        assert log["attempts"][0]["outcome"] == "rate_limited"

        receiver.answer = lambda path, n: (500, {})
        async with engine.begin() as conn:
            await conn.execute(webhook_deliveries.update().values(next_attempt_at_ms=0))
        assert (await deliver_due(s, engine, event_id)).status == "pending"
        async with engine.begin() as conn:
            await conn.execute(webhook_deliveries.update().values(next_attempt_at_ms=0))
        last = await deliver_due(s, engine, event_id)
        assert last.status == "failed" and last.attempts == 3  # the schedule has three attempts


async def test_slow_receiver_times_out(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:

        def slow(path: str, n: int) -> tuple[int, dict[str, str]]:
            time.sleep(1.5)
            return 204, {}

        receiver.answer = slow
        _, event_id = await failed_task_with_webhook(engine, receiver.url())
        row = await deliver_due(sender(engine, receiver, timeout_seconds=0.5), engine, event_id)
        assert row.status == "pending"
        (log,) = await outbox.for_task(engine, task_of(row))
        assert log["attempts"][0]["status_code"] is None and "too_slow" in log["attempts"][0]["error"]


async def test_no_attempt_after_the_result_expired(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:
        _, event_id = await failed_task_with_webhook(engine, receiver.url(), give_up_ms=-1)
        row = await deliver_due(sender(engine, receiver), engine, event_id)
        assert row.status == "failed" and row.attempts == 0 and receiver.received == []


def test_retry_after_forms() -> None:
    assert retry_after_seconds("120") == 120
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    future = retry_after_seconds(time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60)))
    assert future is not None and 55 <= future <= 61
