"""Per-provider concurrency of hosted media providers, in the database so every worker process shares it.

A provider with limit N has rows `(provider, 0..N-1)` in `upstream_slots` (inserted on first use). A task
takes a slot with a compare-and-swap on a row that is free or whose lease ran out, renews it while it runs,
and frees it (only if it still holds it) when its provider call ends. No get-then-set: two processes that
pick the same free row race on one UPDATE and exactly one wins. Lowering the limit in the catalog leaves the
higher rows unused; raising it adds rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.media.tasks.tables import upstream_slots

log = logging.getLogger("modelport.media.hosted")

# How often a task waiting for a slot looks again (a freed slot is taken within this).
WAIT_SECONDS = 0.25


async def _ensure_rows(engine: AsyncEngine, provider: str, limit: int) -> None:
    async with engine.begin() as conn:
        have = set(
            (await conn.execute(select(upstream_slots.c.slot).where(upstream_slots.c.provider == provider))).scalars()
        )
    for slot in range(limit):
        if slot in have:
            continue
        with contextlib.suppress(IntegrityError):  # another process inserted it first
            async with engine.begin() as conn:
                await conn.execute(upstream_slots.insert().values(provider=provider, slot=slot))


async def try_acquire(engine: AsyncEngine, provider: str, limit: int, task_id: str, lease_ms: int) -> int | None:
    """Take a free (or expired) slot below `limit` for `task_id`; its number, or None when all are held."""
    now = now_ms()
    free = or_(
        upstream_slots.c.task_id.is_(None), upstream_slots.c.lease_until_ms < now, upstream_slots.c.task_id == task_id
    )
    async with engine.begin() as conn:
        candidates = list(
            (
                await conn.execute(
                    select(upstream_slots.c.slot)
                    .where(upstream_slots.c.provider == provider, upstream_slots.c.slot < limit, free)
                    .order_by(upstream_slots.c.slot)
                )
            ).scalars()
        )
    for slot in candidates:
        async with engine.begin() as conn:
            won = await conn.execute(
                update(upstream_slots)
                .where(upstream_slots.c.provider == provider, upstream_slots.c.slot == slot, free)
                .values(task_id=task_id, lease_until_ms=now + lease_ms)
            )
        if won.rowcount == 1:
            return int(slot)
    return None


async def renew(engine: AsyncEngine, provider: str, slot: int, task_id: str, lease_ms: int) -> bool:
    async with engine.begin() as conn:
        done = await conn.execute(
            update(upstream_slots)
            .where(
                and_(
                    upstream_slots.c.provider == provider,
                    upstream_slots.c.slot == slot,
                    upstream_slots.c.task_id == task_id,
                )
            )
            .values(lease_until_ms=now_ms() + lease_ms)
        )
    return done.rowcount == 1


async def release(engine: AsyncEngine, provider: str, slot: int, task_id: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            update(upstream_slots)
            .where(
                upstream_slots.c.provider == provider,
                upstream_slots.c.slot == slot,
                upstream_slots.c.task_id == task_id,
            )
            .values(task_id=None, lease_until_ms=None)
        )


@contextlib.asynccontextmanager
async def provider_slot(
    engine: AsyncEngine, provider: str, limit: int, task_id: str, *, lease_seconds: float
) -> AsyncIterator[int]:
    """Hold one of `provider`'s `limit` slots for the block: waits for one, renews it, frees it at the end."""
    lease_ms = int(lease_seconds * 1000)
    await _ensure_rows(engine, provider, limit)
    waited = False
    while (slot := await try_acquire(engine, provider, limit, task_id, lease_ms)) is None:
        if not waited:
            log.info("task %s waits for a slot of provider %s (limit %d)", task_id, provider, limit)
            waited = True
        await asyncio.sleep(WAIT_SECONDS)

    async def keep() -> None:
        while True:
            await asyncio.sleep(lease_seconds / 3)
            with contextlib.suppress(Exception):
                await renew(engine, provider, slot, task_id, lease_ms)

    keeper = asyncio.create_task(keep())
    try:
        yield slot
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
        # Shielded: a cancelled run (lost lease, deadline) still frees its slot at once.
        try:
            await asyncio.shield(release(engine, provider, slot, task_id))
        except Exception:
            log.exception(
                "provider %s slot %d: release failed; it frees itself when its lease runs out", provider, slot
            )
