"""Audit events older than `retention.audit_days` leave with the pruner's run; newer ones and 0 (forever) stay."""

from __future__ import annotations

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.tables import audit_events
from modelport.clock import now_ms
from modelport.retention.audit import DAY_MS, AuditEvents


async def _event(engine: AsyncEngine, at_ms: int) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            insert(audit_events).values(
                at_ms=at_ms, team_id=None, actor_kind="operator_token", action="team.create", target="t"
            )
        )


async def _count(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(audit_events))).scalar_one())


async def test_old_audit_events_are_pruned_and_recent_ones_kept(engine: AsyncEngine) -> None:
    now = now_ms()
    await _event(engine, now - 3 * DAY_MS)
    await _event(engine, now - 1000)
    assert await AuditEvents(days=0).prune(engine, now) == {}  # 0: kept forever
    assert await _count(engine) == 2
    assert await AuditEvents(days=2).prune(engine, now) == {"audit_events": 1}
    assert await _count(engine) == 1
