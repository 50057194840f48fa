"""The webhook sender against odd receivers (issue 21 item 8): `Retry-After` is read leniently and only on
429/503, every attempt is recorded whatever happens in it, and one team's slow receiver cannot hold the
sender slots other teams' events need. SQLite outbox, the real fetcher, a real local receiver."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.net.retry_after import retry_after_seconds
from modelport.webhooks import outbox
from modelport.webhooks.tables import webhook_deliveries
from tests.integration.tasks.helpers import WebhookReceiver
from tests.integration.tasks.test_webhook_sender import (
    close_fetchers,
    deliver_due,
    failed_task_for_team,
    failed_task_with_webhook,
    sender,
    task_of,
)
from tests.support.databases import migrated_engine

ODD = ["²", "--5", "-5", "soon", "Mon, 99 Foo 2025 99:99:99 GMT", "1e9999", "٣"]


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_engine("sqlite", tmp_path) as eng:
        yield eng


@pytest.fixture(autouse=True)
async def _fetchers_closed() -> AsyncIterator[None]:
    yield
    await close_fetchers()  # the fetchers `sender()` made


@pytest.mark.parametrize("value", ODD)
def test_odd_retry_after_values_are_none(value: str) -> None:
    assert retry_after_seconds(value) is None


@pytest.mark.parametrize("status", [200, 500, 429, 503])
async def test_odd_retry_after_never_stops_an_attempt_being_recorded(engine: AsyncEngine, status: int) -> None:
    with WebhookReceiver().running() as receiver:
        receiver.answer = lambda path, n: (status, {"Retry-After": "²"})
        _, event_id = await failed_task_with_webhook(engine, receiver.url())
        row = await deliver_due(sender(engine, receiver), engine, event_id)
        assert row.attempts == 1 and row.lease_until_ms == 0  # recorded, claim given back
        assert row.status == ("delivered" if status == 200 else "pending")
        (log,) = await outbox.for_task(engine, task_of(row))
        assert log["attempts"][0]["status_code"] == status


@pytest.mark.parametrize(("status", "honoured"), [(429, True), (503, True), (500, False), (400, False)])
async def test_retry_after_is_honoured_only_on_429_and_503(engine: AsyncEngine, status: int, honoured: bool) -> None:
    with WebhookReceiver().running() as receiver:
        receiver.answer = lambda path, n: (status, {"Retry-After": "30"})
        _, event_id = await failed_task_with_webhook(engine, receiver.url())
        before = now_ms()
        row = await deliver_due(sender(engine, receiver), engine, event_id)
        assert row.status == "pending"
        assert (row.next_attempt_at_ms >= before + 30_000) is honoured, row


async def test_an_unexpected_error_in_an_attempt_is_recorded(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:
        _, event_id = await failed_task_with_webhook(engine, receiver.url())
        s = sender(engine, receiver)

        async def broken(*_args: object, **_kwargs: object) -> object:
            raise UnicodeEncodeError("latin-1", "x", 0, 1, "an odd header")

        s._fetcher.send = broken  # type: ignore[method-assign,assignment]
        row = await deliver_due(s, engine, event_id)
        assert row.status == "pending" and row.attempts == 1 and row.lease_until_ms == 0
        (log,) = await outbox.for_task(engine, task_of(row))
        assert "internal error: UnicodeEncodeError" in log["attempts"][0]["error"]


async def test_a_slow_team_cannot_hold_every_slot(engine: AsyncEngine) -> None:
    release = threading.Event()
    with WebhookReceiver().running() as receiver:

        def answer(path: str, n: int) -> tuple[int, dict[str, str]]:
            if path == "/slow":
                release.wait(20)  # a receiver that takes its time
            return 204, {}

        receiver.answer = answer
        # The slow team's six events are due first (older), then one event of another team.
        slow_team, _first = await failed_task_with_webhook(engine, receiver.url("/slow"))
        for _ in range(5):
            await failed_task_for_team(engine, slow_team, receiver.url("/slow"))
        _, other_event = await failed_task_with_webhook(engine, receiver.url("/fast"))
        async with engine.begin() as conn:  # the slow team's rows strictly older
            await conn.execute(
                webhook_deliveries.update().where(webhook_deliveries.c.id != other_event).values(next_attempt_at_ms=1)
            )
        s = sender(engine, receiver, concurrency=4, per_team_concurrency=2, timeout_seconds=30.0)
        try:
            await s.send_due()
            deadline = time.monotonic() + 15
            while True:
                async with engine.connect() as conn:
                    status = (
                        await conn.execute(
                            select(webhook_deliveries.c.status).where(webhook_deliveries.c.id == other_event)
                        )
                    ).scalar_one()
                if status == "delivered" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            # Delivered while every one of the slow team's requests was still waiting for its answer.
            assert status == "delivered"
            assert not release.is_set()

            def slow_received() -> int:
                return sum(1 for r in receiver.received if r.headers.get("webhook-id") != other_event)

            # The slow team's second request may reach the receiver after the other team's delivery on a
            # loaded machine: wait for it, then give a third (which must never come) time to arrive.
            while True:
                if slow_received() >= 2 or time.monotonic() > deadline + 15:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            assert slow_received() == 2  # the team's share of the slots, no more
        finally:
            release.set()
            await asyncio.gather(*s._inflight, return_exceptions=True)
