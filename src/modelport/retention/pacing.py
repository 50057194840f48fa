"""The pause between two pruning batches: at least the configured pause, and at least as long as the batch
took, so the pruner holds the database (on SQLite, its one write lock) at most about half the time."""

from __future__ import annotations

import asyncio
import time


async def pause_after(started: float, minimum: float) -> None:
    """`started`: `time.monotonic()` when the batch began."""
    await asyncio.sleep(max(minimum, time.monotonic() - started))
