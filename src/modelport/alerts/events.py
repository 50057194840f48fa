"""The operator events: their types and their JSON bodies (`type`, `timestamp`, `data`: docs/api/operator-alerts.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

DEPLOYMENT_DOWN = "deployment.down"
DEPLOYMENT_UP = "deployment.up"
TASKS_BACKLOG = "tasks.backlog"
TASKS_BACKLOG_RESOLVED = "tasks.backlog.resolved"
STORAGE_LOW = "storage.low"
STORAGE_LOW_RESOLVED = "storage.low.resolved"


@dataclass(frozen=True, slots=True)
class OperatorEvent:
    type: str
    data: dict[str, Any]

    def body(self, at_ms: int) -> str:
        """The exact JSON every attempt sends (the shape of task webhooks)."""
        when = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
        stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return orjson.dumps({"type": self.type, "timestamp": stamp, "data": self.data}).decode()
