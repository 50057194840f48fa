"""`prune_audit`, the retention pruner's call: events older than the cut go, newer ones stay (both databases)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import insert, select

from modelport.accounts.audit import Actor, prune_audit, record
from modelport.accounts.tables import audit_events
from modelport.clock import now_ms
from tests.support.databases import BACKENDS, migrated_engine


@pytest.mark.parametrize("backend", BACKENDS)
async def test_prune_audit_deletes_only_older_events(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        old = {"actor_kind": "operator_token", "action": "team.topup", "target": "team_x", "team_id": "team_x"}
        async with engine.begin() as conn:
            await conn.execute(insert(audit_events).values([{**old, "at_ms": 1_000}, {**old, "at_ms": 2_000}]))
            await record(conn, Actor("operator_cli"), "team.tier", team_id="team_x", target="team_x")
        assert await prune_audit(engine, 2_000) == 1
        assert await prune_audit(engine, 2_000) == 0
        async with engine.connect() as conn:
            left = sorted(int(r.at_ms) for r in (await conn.execute(select(audit_events.c.at_ms))).all())
        assert left[0] == 2_000 and len(left) == 2 and left[1] >= now_ms() - 600_000
