"""One registry row per webhook event type (`webhooks/registry.py`), and every source's types are there."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from modelport.alerts import events as operator_events
from modelport.billing import notify
from modelport.media.tasks.events import TaskEvent, task_event
from modelport.webhooks import outbox
from modelport.webhooks.registry import EVENT_TYPES, SOURCES, event_body, event_types


def test_each_sources_types_are_its_registry_rows() -> None:
    assert set(event_types("task")) == set(TaskEvent)
    assert event_types("notification") == notify.EVENT_TYPES
    operator = {v for k, v in vars(operator_events).items() if k.isupper() and isinstance(v, str)}
    assert set(event_types("operator")) == operator
    assert set(EVENT_TYPES.values()) == set(SOURCES)
    assert sum(len(event_types(s)) for s in SOURCES) == len(EVENT_TYPES)


def test_every_source_sends_the_same_body() -> None:
    at_ms = 1_700_000_000_123
    body = orjson.loads(event_body("balance.low", {"team_id": "t"}, at_ms))
    assert body == {"type": "balance.low", "timestamp": "2023-11-14T22:13:20.123Z", "data": {"team_id": "t"}}
    task = task_event(TaskEvent.FAILED, {"task_id": "x"}, at_ms=at_ms, give_up_at_ms=at_ms + 1)
    assert task.payload == event_body("task.failed", {"task_id": "x"}, at_ms)
    assert notify.payload("balance.low", {"team_id": "t"}, at_ms) == event_body("balance.low", {"team_id": "t"}, at_ms)
    alert = operator_events.OperatorEvent(operator_events.STORAGE_LOW, {"path": "/"})
    assert alert.body(at_ms) == event_body("storage.low", {"path": "/"}, at_ms)


@pytest.mark.parametrize(
    ("event_type", "source"), [("task.succeeded", "notification"), ("balance.lowish", "notification")]
)
async def test_the_outbox_refuses_an_unregistered_event_type(event_type: str, source: Any) -> None:
    # Refused before any row is written (no connection is touched).
    with pytest.raises(ValueError, match="registry"):
        await outbox.enqueue(None, team_id="t", url="https://x", event_type=event_type, payload="{}", source=source)  # type: ignore[arg-type]
