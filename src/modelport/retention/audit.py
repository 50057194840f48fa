"""The audit log as a prune target: events older than `retention.audit_days` (0: kept forever)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.audit import prune_audit

DAY_MS = 86_400_000


@dataclass(slots=True)
class AuditEvents:
    days: float
    name: str = "audit_events"

    async def prune(self, engine: AsyncEngine, now_ms: int) -> dict[str, int]:
        if self.days <= 0:
            return {}
        return {"audit_events": await prune_audit(engine, now_ms - int(self.days * DAY_MS))}
