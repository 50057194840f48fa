"""An alert's state across processes: a compare-and-set of its `operator_alert_state` row, with the event
written to the webhook outbox in the same transaction. Two processes that see the same change race on the
row; the one whose UPDATE (or first INSERT) changed it writes the event, the other writes nothing."""

from __future__ import annotations

import hashlib

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.alerts.events import OperatorEvent
from modelport.alerts.tables import operator_alert_state
from modelport.clock import now_ms
from modelport.metrics import OPERATOR_ALERTS
from modelport.webhooks import outbox

MAX_KEY_CHARS = 300


def alert_key(*parts: str) -> str:
    """`deployment:<model>#<i>`, `storage:<host>:<path>`: hashed past the column's width (a deep path)."""
    key = ":".join(parts)
    if len(key) <= MAX_KEY_CHARS:
        return key
    return f"{parts[0]}:sha256:{hashlib.sha256(key.encode()).hexdigest()}"


async def report(engine: AsyncEngine, key: str, *, alerting: bool, event: OperatorEvent, url: str) -> str | None:
    """Set alert `key` to `alerting`. If this call changed it, `event` goes to the outbox in the same
    transaction (retried on the webhook schedule, like a task's event) and its `webhook-id` is returned;
    None when the state already was that (unchanged, or another process reported the change first). A key
    never seen counts as not alerting."""
    async with engine.connect() as conn:  # most checks change nothing: no write transaction for them
        current = await conn.scalar(select(operator_alert_state.c.alerting).where(operator_alert_state.c.key == key))
    if bool(current) == alerting:
        return None
    now = now_ms()
    event_id = outbox.new_delivery_id()
    async with engine.begin() as conn:
        if not await _flip(conn, key, alerting=alerting, now=now, event_id=event_id):
            return None
        await outbox.enqueue(
            conn,
            team_id=None,
            source="operator",
            url=url,
            event_type=event.type,
            payload=event.body(now),
            delivery_id=event_id,
        )
    OPERATOR_ALERTS.labels(event.type).inc()
    return event_id


async def _flip(conn: AsyncConnection, key: str, *, alerting: bool, now: int, event_id: str) -> bool:
    values = {"alerting": alerting, "changed_at_ms": now, "event_id": event_id}
    if alerting:
        # The first report of a key: the row does not exist yet. ON CONFLICT DO NOTHING makes a concurrent
        # first report wait for ours and then insert nothing (and its UPDATE below finds the row alerting).
        insert = (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(operator_alert_state)
        inserted = await conn.execute(insert.values(key=key, **values).on_conflict_do_nothing(index_elements=["key"]))
        if inserted.rowcount:
            return True
    changed = await conn.execute(
        update(operator_alert_state)
        .where(operator_alert_state.c.key == key, operator_alert_state.c.alerting == (not alerting))
        .values(**values)
    )
    return bool(changed.rowcount)
