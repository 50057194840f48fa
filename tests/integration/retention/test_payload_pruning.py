"""Emptying old payloads (issue 23 item 1, `LOG_PAYLOADS_DAYS`), a UTC day at a time, on both databases.

Rows spread over several days, a batch smaller than a day's rows: every row older than the window loses its
`input` and `result` and keeps everything else; every newer row keeps its payloads; rows that never held one
are not counted; a second run finds nothing left to do.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.requestlog.tables import request_logs
from modelport.retention import partitions
from modelport.retention.logs import prune_payloads
from modelport.retention.pacing import Pacing

DAY_MS = 86_400_000


async def rows_by_id(engine: AsyncEngine) -> dict[str, dict[str, Any]]:
    async with engine.connect() as conn:
        found = await conn.execute(select(request_logs))
        return {r.id: dict(r._mapping) for r in found}


async def test_payloads_older_than_the_window_are_emptied_day_by_day(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "payloads", tier="free")
    now_ms = int(time.time() * 1000)
    today = now_ms // DAY_MS
    if await partitions.is_partitioned(engine):
        await partitions.ensure_days(engine, today - 8, today + 1)
    records = []
    for age_days in range(7):  # today and the six days before it, 9 rows each (a third without payloads)
        for k in range(9):
            at = now_ms - age_days * DAY_MS - k * 60_000
            payload = None if k % 3 == 0 else f'{{"q": "{age_days}-{k}"}}'
            records.append(
                LogRecord(
                    f"req_{age_days}_{k}",
                    team.id,
                    at,
                    "success",
                    "p",
                    "m",
                    "chat.completions",
                    cost_micros=k,
                    input=payload,
                    result=payload,
                )
            )
    assert await insert_logs(engine, records) == len(records)
    before = await rows_by_id(engine)

    cutoff_days = 2.5
    pacing = Pacing(batch_rows=4, pause_seconds=0, busy_share=1.0)
    emptied = await prune_payloads(engine, cutoff_days, pacing, now_ms)

    cutoff = now_ms - int(cutoff_days * DAY_MS)
    expected = [r.id for r in records if r.created_at_ms < cutoff and r.input is not None]
    assert emptied == len(expected) > 4 * 3  # several days, several batches each
    after = await rows_by_id(engine)
    assert after.keys() == before.keys()
    for row_id, row in after.items():
        old = before[row_id]
        if row_id in expected:
            assert row["input"] is None and row["result"] is None
        else:
            assert (row["input"], row["result"]) == (old["input"], old["result"])
        assert {k: v for k, v in row.items() if k not in ("input", "result")} == {
            k: v for k, v in old.items() if k not in ("input", "result")
        }
    assert await prune_payloads(engine, cutoff_days, pacing, now_ms) == 0
