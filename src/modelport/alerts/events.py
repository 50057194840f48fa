"""The operator events: their types and their JSON bodies (`type`, `timestamp`, `data`: docs/api/operator-alerts.md).
Each type has its row in `webhooks/registry.py` (source `operator`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelport.webhooks.registry import event_body

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
        return event_body(self.type, self.data, at_ms)
