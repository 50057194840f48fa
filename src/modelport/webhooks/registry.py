"""Every webhook event type, one row each: which source sends it. `outbox.enqueue` refuses a type that is
not here, or that another source owns.

A source builds its own events (their data, when they fire): a task's (`media/tasks/events.py`), a team
notification's (`billing/notify.py`), an operator alert's (`alerts/events.py`). Adding an event type is a
change in its source plus one row below. Every event has the same body (`event_body`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal

import orjson

# What an event reports: a task's change (team and task), a team notification (team, no task) or an
# operator alert (no team; signed with the operator's secret).
Source = Literal["task", "notification", "operator"]
SOURCES: tuple[Source, ...] = ("task", "notification", "operator")

EVENT_TYPES: Mapping[str, Source] = MappingProxyType(
    {
        # docs/api: a task's webhook (`X-Webhook-Events` chooses among them)
        "task.started": "task",
        "task.progress": "task",
        "task.succeeded": "task",
        "task.failed": "task",
        "task.cancelled": "task",
        # docs/api/notifications.md
        "balance.low": "notification",
        "balance.exhausted": "notification",
        "key.spend_threshold": "notification",
        "key.expiring": "notification",
        "notification.test": "notification",
        # docs/api/operator-alerts.md
        "deployment.down": "operator",
        "deployment.up": "operator",
        "tasks.backlog": "operator",
        "tasks.backlog.resolved": "operator",
        "storage.low": "operator",
        "storage.low.resolved": "operator",
    }
)


def event_types(source: Source) -> tuple[str, ...]:
    """The event types of one source, in registry order."""
    return tuple(name for name, owner in EVENT_TYPES.items() if owner == source)


def event_body(event_type: str, data: Mapping[str, Any], at_ms: int) -> str:
    """The exact JSON every attempt of an event sends (Standard Webhooks' shape): `type`, `timestamp`
    (ISO 8601, ms, UTC) and `data`."""
    when = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
    body = {
        "type": event_type,
        "timestamp": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "data": data,
    }
    return orjson.dumps(body).decode()
