"""Reading the daily usage rollups (`usage_daily`, kept by `store.insert_logs`).

A team's rows for a period are at most days x keys x models, a few hundred, whatever the number of log
rows: the console's usage pages and charts aggregate them in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.requestlog.tables import usage_daily


@dataclass(frozen=True, slots=True)
class UsageRow:
    day: int  # UTC days since 1970-01-01
    key_id: str  # '' for rows logged before keys were recorded
    provider: str
    model_name: str
    requests: int
    errors: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int  # cache reads
    cost_micros: int
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    # The response cache: hits, misses and what the hits saved (what the team did not pay).
    cache_hits: int = 0
    cache_misses: int = 0
    cache_saved_micros: int = 0

    @property
    def model(self) -> str:
        return f"{self.provider}/{self.model_name}"


async def daily_usage(engine: AsyncEngine, team_id: str, first_day: int, last_day: int) -> Sequence[UsageRow]:
    """The team's rollup rows with first_day <= day <= last_day, oldest first."""
    c = usage_daily.c
    stmt = (
        select(
            c.day,
            c.key_id,
            c.provider,
            c.model_name,
            c.requests,
            c.errors,
            c.prompt_tokens,
            c.completion_tokens,
            c.cached_tokens,
            c.cost_micros,
            c.cache_write_tokens,
            c.cache_write_1h_tokens,
            c.cache_hits,
            c.cache_misses,
            c.cache_saved_micros,
        )
        .where(c.team_id == team_id, c.day >= first_day, c.day <= last_day)
        .order_by(c.day, c.key_id, c.provider, c.model_name)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [UsageRow(*(r[0:4]), *(int(v) for v in r[4:])) for r in rows]
