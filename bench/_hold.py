"""What a balance hold costs: `ledger.reserve` (a credit reservation, which the hot path takes once per many
requests) timed alone, against the gateway's own database.

Run after the gateway has stopped (so nothing else writes), on the demo team the benchmark used. Reports
wall time and CPU per hold one at a time and with 16 holds in flight, and the cost per settlement when
settlements are written in a batch of 100 (how the gateway writes them, off the hot path).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from sqlalchemy import select

from modelport.accounts.tables import teams
from modelport.billing import ledger
from modelport.billing.settlement import Settlement, write_settlements
from modelport.storage.db import create_engine


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


async def measure(database_url: str, *, holds: int = 400) -> dict[str, Any]:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            team_id = (await conn.execute(select(teams.c.id).where(teams.c.name == "demo"))).scalar_one()
        refs = [f"req_bench_hold_{i}" for i in range(holds * 2)]
        for ref in refs[:20]:  # warm the pool and the statement cache
            await ledger.reserve(
                engine, team_id, want_micros=1, minimum_micros=1, ref=ref, owner="bench", lease_until_ms=2**62
            )

        walls: list[float] = []
        cpu0 = time.process_time()
        for ref in refs[20:holds]:
            t0 = time.perf_counter()
            await ledger.reserve(
                engine, team_id, want_micros=1, minimum_micros=1, ref=ref, owner="bench", lease_until_ms=2**62
            )
            walls.append(time.perf_counter() - t0)
        serial_cpu = (time.process_time() - cpu0) / len(walls)

        # 16 in flight, as at concurrency 16: they queue on the database's single writer lock (SQLite).
        sem = asyncio.Semaphore(16)
        concurrent_walls: list[float] = []

        async def one(ref: str) -> None:
            async with sem:
                t0 = time.perf_counter()
                await ledger.reserve(
                    engine, team_id, want_micros=1, minimum_micros=1, ref=ref, owner="bench", lease_until_ms=2**62
                )
                concurrent_walls.append(time.perf_counter() - t0)

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(ref) for ref in refs[holds:]))
        concurrent_elapsed = time.perf_counter() - t0
        concurrent_cpu = (time.process_time() - cpu0) / holds

        batch = [Settlement(team_id, 1, 1, ref) for ref in refs[:100]]
        cpu0, t0 = time.process_time(), time.perf_counter()
        await write_settlements(engine, batch)
        settle_wall = (time.perf_counter() - t0) / len(batch)
        settle_cpu = (time.process_time() - cpu0) / len(batch)
        return {
            "database": engine.dialect.name,
            "hold_serial_p50_ms": _ms(statistics.median(walls)),
            "hold_serial_mean_ms": _ms(statistics.fmean(walls)),
            "hold_serial_cpu_ms": _ms(serial_cpu),
            "hold_16_in_flight_p50_ms": _ms(statistics.median(concurrent_walls)),
            "hold_16_in_flight_per_s": round(holds / concurrent_elapsed),
            "hold_16_in_flight_cpu_ms": _ms(concurrent_cpu),
            "settlement_batched_wall_ms": _ms(settle_wall),
            "settlement_batched_cpu_ms": _ms(settle_cpu),
        }
    finally:
        await engine.dispose()
