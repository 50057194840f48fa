"""How pruning batches are paced: rows per batch, and the pause after each, so that serving keeps the
database (on SQLite, its one write lock) and the machine most of the time."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from modelport.settings import RetentionSettings


@dataclass(frozen=True, slots=True)
class Pacing:
    batch_rows: int
    pause_seconds: float  # the least pause after a batch
    busy_share: float  # the largest share of the time the batches may take, in (0, 1]

    @classmethod
    def of(cls, settings: RetentionSettings) -> Pacing:
        return cls(settings.batch_rows, settings.batch_pause_seconds, settings.busy_share)

    async def pause_after(self, started: float) -> None:
        """Pause after a batch that began at `started` (`time.monotonic()`): at least `pause_seconds`, and
        long enough that the batch took at most `busy_share` of the time since it began."""
        took = time.monotonic() - started
        await asyncio.sleep(max(self.pause_seconds, took * (1.0 / self.busy_share - 1.0)))
