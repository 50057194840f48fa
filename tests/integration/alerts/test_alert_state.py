"""The alert state's compare-and-set on both databases: of many reports of the same change made at once
(as by several processes), exactly one writes its event to the outbox, in the same transaction; a report
that changes nothing writes nothing; the router tells a listener each change once per process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.alerts.events import TASKS_BACKLOG, TASKS_BACKLOG_RESOLVED, OperatorEvent
from modelport.alerts.state import alert_key, report
from modelport.alerts.tables import operator_alert_state
from modelport.storage.db import create_engine
from modelport.webhooks.tables import webhook_deliveries
from tests.support.databases import BACKENDS, migrated_engine

URL = "https://ops.example/hook"


@pytest.fixture(params=BACKENDS)
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_engine(request.param, tmp_path) as eng:
        yield eng


async def outbox_rows(engine: AsyncEngine) -> list[tuple[str, str, str | None, str]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(
                webhook_deliveries.c.id,
                webhook_deliveries.c.event_type,
                webhook_deliveries.c.team_id,
                webhook_deliveries.c.source,
            ).order_by(webhook_deliveries.c.created_at_ms)
        )
        return [(r.id, r.event_type, r.team_id, r.source) for r in rows]


async def test_one_report_per_change_among_concurrent_ones(engine: AsyncEngine, tmp_path: Path) -> None:
    # Separate engines (pools) stand for separate processes.
    url = str(engine.url.render_as_string(hide_password=False))
    others = [create_engine(url) for _ in range(4)]
    try:
        low = OperatorEvent(TASKS_BACKLOG, {"queued": 3})
        ids = await asyncio.gather(
            *(report(e, "tasks.backlog", alerting=True, event=low, url=URL) for e in [engine, *others] * 2)
        )
        (winner,) = [i for i in ids if i is not None]
        assert await outbox_rows(engine) == [(winner, TASKS_BACKLOG, None, "operator")]

        # The same state again changes nothing; the change back is reported once.
        assert await report(engine, "tasks.backlog", alerting=True, event=low, url=URL) is None
        cleared = OperatorEvent(TASKS_BACKLOG_RESOLVED, {"queued": 0})
        ids = await asyncio.gather(
            *(report(e, "tasks.backlog", alerting=False, event=cleared, url=URL) for e in [engine, *others] * 2)
        )
        (resolved,) = [i for i in ids if i is not None]
        rows = await outbox_rows(engine)
        assert [r[1] for r in rows] == [TASKS_BACKLOG, TASKS_BACKLOG_RESOLVED] and rows[1][0] == resolved
        async with engine.connect() as conn:
            state = (await conn.execute(select(operator_alert_state))).one()
        assert (state.key, state.alerting, state.event_id) == ("tasks.backlog", False, resolved)
        async with engine.connect() as conn:
            payload = await conn.scalar(select(webhook_deliveries.c.payload).where(webhook_deliveries.c.id == winner))
        body = json.loads(payload or "")
        assert body["type"] == TASKS_BACKLOG and body["data"] == {"queued": 3} and body["timestamp"].endswith("Z")
    finally:
        for other in others:
            await other.dispose()


async def test_a_key_never_seen_is_not_alerting(engine: AsyncEngine) -> None:
    cleared = OperatorEvent(TASKS_BACKLOG_RESOLVED, {})
    assert await report(engine, "storage:h:/x", alerting=False, event=cleared, url=URL) is None
    assert await outbox_rows(engine) == []


def test_long_keys_are_hashed_to_the_column() -> None:
    short = alert_key("storage", "host", "/var/lib/modelport")
    assert short == "storage:host:/var/lib/modelport"
    deep = alert_key("storage", "host", "/x" * 400)
    assert deep.startswith("storage:sha256:") and len(deep) <= 300
    assert deep == alert_key("storage", "host", "/x" * 400) != alert_key("storage", "host", "/y" * 400)
