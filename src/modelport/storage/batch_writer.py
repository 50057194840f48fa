"""`BatchWriter[T]`: rows leave the request path at once and reach the database in batches, durably.

Used for the request log and for settlements (billing). `submit()` only appends to an in-memory queue. A
background task writes the queue in batches of up to `max_batch` rows, at the latest `flush_interval`
seconds after a row arrives (sooner when a full batch is waiting). The batch write must be idempotent
(log rows by request id, settlements by their key), so a failed batch is simply retried, with
exponential backoff, until it lands: no row is lost or applied twice by a database outage.

Outages and bounded memory, with a `spill_dir` (set one in production): once a write fails and the
database does not answer `SELECT 1`, every row in memory, and every row submitted until a write succeeds
again, goes to a spill file (see `spill.py`); the files are replayed (retrying until the database is back)
whenever the queue is empty, and by the next process to start. Rows also spill whenever `max_pending`
rows are already waiting. Without a `spill_dir`, the failed batch is retried in memory, up to
`max_pending` rows wait behind it, and rows beyond that are dropped and logged.

A batch that keeps failing while the database answers `SELECT 1` holds a bad row: it is split in halves
until the bad row is alone, and that row is logged in full and dropped (`stats.rejected`), so one bad row
never blocks the others.

Shutdown: `aclose()` drains the queue into the database; if the database still fails after
`close_timeout` seconds, the remainder goes to the spill file (replayed by the next process to start).

Crash bound: a hard kill (SIGKILL, power loss) loses the rows still in memory: those submitted in the last
`flush_interval` seconds plus the batch being written (at most `max_batch` rows). During an outage that
is also the bound with a `spill_dir` (rows submitted before the outage was detected); without one, up to
`max_pending` rows. Spilled rows survive a killed process (not a power cut: they are not fsynced).

Call `submit()` from the event loop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar, Unpack

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.metrics import WRITE_DROPPED, WRITE_FLUSH_SECONDS, WRITE_QUEUE_DEPTH, WRITE_SPILLED
from modelport.storage.spill import SpillFile

T = TypeVar("T")
# Writes one batch idempotently to the writer's database; returns how many of its rows were new (the rest
# were there already).
WriteBatch = Callable[[AsyncEngine, list[T]], Awaitable[int]]


class Tuning(TypedDict, total=False):
    """How a writer batches, retries and spills; every key has a default (`BatchWriter.__init__`). Writers
    built on `BatchWriter` take these as keyword arguments and pass them on as they are."""

    max_batch: int
    flush_interval: float
    spill_dir: Path | None
    close_timeout: float
    retry_initial: float
    retry_max: float


class BoundedTuning(Tuning, total=False):
    # Rows waiting in memory before more spill (or, without a spill dir, are dropped); default
    # `BatchWriter.default_max_pending`.
    max_pending: int


class _ReplayAbandoned(Exception):
    """A spill file's replay stops at shutdown while the database is unreachable."""


@dataclass(slots=True)
class WriterStats:
    written: int = 0  # rows newly inserted
    duplicates: int = 0  # rows already present (a retried batch, a replayed spill file)
    spilled: int = 0  # rows sent to the spill file
    dropped: int = 0  # rows lost: over max_pending with no spill_dir, or undeliverable at close
    rejected: int = 0  # rows the database refused on their own (logged)
    failures: int = 0  # failed insert attempts


class BatchWriter(Generic[T]):
    default_max_pending = 50_000
    # Tuning a writer is not given: class attributes, so one place (bench/_guard_launcher.py) can change them.
    default_max_batch = 500
    default_flush_interval = 0.2
    # After a full batch, the rows queued meanwhile are written at once, a short batch (the least wait). Off
    # (bench/_guard_launcher.py), a short batch waits for the interval, a flush() or the close: the number of
    # writes then follows the number of rows, not the timing of their arrival.
    default_short_batches_at_once = True

    def __init__(
        self,
        engine: AsyncEngine,
        write_batch: WriteBatch[T],
        *,
        name: str,
        to_row: Callable[[T], dict[str, Any]],
        from_row: Callable[[dict[str, Any]], T],
        **tuning: Unpack[BoundedTuning],
    ) -> None:
        max_batch = tuning.get("max_batch", self.default_max_batch)
        max_pending = tuning.get("max_pending", self.default_max_pending)
        spill_dir = tuning.get("spill_dir")
        if max_batch < 1 or max_pending < max_batch:
            raise ValueError("need 1 <= max_batch <= max_pending")
        self._engine = engine
        self._write_batch = write_batch
        self._name = name
        self._log = logging.getLogger(f"modelport.{name.replace(' ', '_')}")
        self._max_batch = max_batch
        self._interval = tuning.get("flush_interval", self.default_flush_interval)
        self._short_at_once = self.default_short_batches_at_once
        self._flush_asked = False
        self._max_pending = max_pending
        self._spill = SpillFile(spill_dir, to_row, from_row) if spill_dir is not None else None
        self._close_timeout = tuning.get("close_timeout", 10.0)
        self._retry_initial = tuning.get("retry_initial", 0.1)
        self._retry_max = tuning.get("retry_max", 5.0)
        self._queue: deque[T] = deque()
        self._inflight: list[T] = []
        # Rows that enter the queue are numbered 0, 1, ...; a flush() waits until every number below its
        # target has left memory (written, rejected or spilled).
        self._enqueued = 0
        self._inflight_from = 0
        self._database_down = False
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._closed = False
        self.stats = WriterStats()

    @property
    def pending(self) -> int:
        return len(self._queue) + len(self._inflight)

    def submit(self, rec: T) -> None:
        """Queue one row; never waits."""
        down = self._database_down and self._spill is not None
        if self._closed or down or self.pending >= self._max_pending:
            self._overflow([rec])
            return
        self._queue.append(rec)
        self._enqueued += 1
        if len(self._queue) >= self._max_batch:
            self._wake.set()

    async def start(self) -> None:
        if self._task is None and not self._closed:
            self._task = asyncio.create_task(self._run(), name=f"{self._name} writer")

    async def flush(self) -> None:
        """Wait until every row recorded before this call is in the database (or spilled, or rejected).

        During an outage the rows are spilled (with a `spill_dir`) and this returns; without a `spill_dir` it
        waits until the database is back (bound it with `asyncio.timeout` if needed).
        """
        target = self._enqueued
        if self._durable_below() >= target:
            return
        await self.start()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        self._flush_asked = True
        self._wake.set()
        await future

    async def aclose(self) -> None:
        """Drain into the database; what cannot be written within `close_timeout` is spilled."""
        if self._closed:
            return
        await self.start()
        self._closing = True
        self._wake.set()
        task = self._task
        assert task is not None
        try:
            await asyncio.wait_for(asyncio.shield(task), self._close_timeout)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        except Exception:
            self._log.exception("%s writer failed", self._name)
        leftovers = [*self._inflight, *self._queue]
        self._inflight, self._queue = [], deque()
        self._closed = True
        if leftovers:
            self._log.error("database unavailable at shutdown: %d %s rows not written yet", len(leftovers), self._name)
            self._overflow(leftovers)
        self._notify()
        if self._spill is not None:
            self._spill.seal()

    # -- background task ---------------------------------------------------------------------------

    async def _run(self) -> None:
        await self._replay_spilled()
        while True:
            timed_out = False
            if not self._closing:
                try:
                    await asyncio.wait_for(self._wake.wait(), self._interval)
                except TimeoutError:
                    timed_out = True
                self._wake.clear()
            short_too = timed_out or self._short_at_once or self._flush_asked or self._closing
            self._flush_asked = False
            WRITE_QUEUE_DEPTH.labels(self._name).set(self.pending)
            while self._queue and (short_too or len(self._queue) >= self._max_batch):
                count = min(self._max_batch, len(self._queue))
                self._inflight_from = self._enqueued - len(self._queue)
                self._inflight = [self._queue.popleft() for _ in range(count)]
                started = time.perf_counter()
                await self._write(self._inflight, from_memory=True)
                WRITE_FLUSH_SECONDS.labels(self._name).observe(time.perf_counter() - started)
                self._inflight = []
                self._notify()
            WRITE_QUEUE_DEPTH.labels(self._name).set(self.pending)
            if self._closing:
                return
            if self._spill is not None and self._spill.active_rows:
                self._spill.seal()
                await self._replay_spilled()

    async def _replay_spilled(self) -> None:
        if self._spill is None:
            return
        try:
            for claimed in self._spill.claim():
                for batch in claimed.batches(self._max_batch):
                    await self._write(batch, from_memory=False)
                claimed.remove()
        except _ReplayAbandoned:
            pass  # shutting down while the database is away: the file stays for the next process
        except OSError:
            # The files stay where they are; the next replay (or the next process) tries again.
            self._log.exception("cannot replay %s spill files in %s", self._name, self._spill.directory)

    async def _write(self, batch: list[T], *, from_memory: bool) -> bool:
        """Insert until the batch lands, isolating and rejecting rows the database refuses while it answers.

        Returns True when, instead, the rows in memory went to the spill file because the database is
        unreachable (only for a batch from memory: a batch replayed from a spill file waits it out).
        """
        failures = 0
        while True:
            try:
                new = await self._write_batch(self._engine, batch)
            except Exception as exc:
                failures += 1
                self.stats.failures += 1
                if await self._database_answers():
                    if len(batch) > 1:
                        half = len(batch) // 2
                        return await self._write(batch[:half], from_memory=from_memory) or await self._write(
                            batch[half:], from_memory=from_memory
                        )
                    if failures >= 2:
                        self.stats.rejected += 1
                        self._log.error("%s row rejected by the database: %r: %s", self._name, batch[0], exc)
                        return False
                    continue
                if not self._database_down:
                    self._database_down = True
                    self._log.warning("%s: database unreachable: %s", self._name, exc)
                if from_memory and self._spill_memory():
                    return True
                if not from_memory and self._closing:
                    raise _ReplayAbandoned from exc
                delay = min(self._retry_max, self._retry_initial * 2 ** (failures - 1))
                await asyncio.sleep(delay)
            else:
                if self._database_down:
                    self._database_down = False
                    self._log.warning("%s: database is back", self._name)
                self.stats.written += new
                self.stats.duplicates += len(batch) - new
                return False

    async def _database_answers(self) -> bool:
        try:
            async with self._engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception:
            return False
        return True

    # -- bookkeeping -------------------------------------------------------------------------------

    def _overflow(self, records: list[T]) -> None:
        """Rows that cannot wait in memory: to the spill file, else dropped."""
        if not self._try_spill(records):
            self.stats.dropped += len(records)
            WRITE_DROPPED.labels(self._name).inc(len(records))
            self._log.error("%s rows dropped (no room in memory, no spill file): %d", self._name, len(records))

    def _try_spill(self, records: list[T]) -> bool:
        if self._spill is None:
            return False
        try:
            spilled = self._spill.append(records)
        except OSError:
            self._log.exception("cannot write the %s spill file", self._name)
            return False
        self.stats.spilled += spilled
        WRITE_SPILLED.labels(self._name).inc(spilled)
        return True

    def _spill_memory(self) -> bool:
        """Move every row in memory (the batch being written included) to the spill file."""
        if not self._try_spill([*self._inflight, *self._queue]):
            return False
        self._inflight = []
        self._queue.clear()
        self._notify()
        return True

    def _durable_below(self) -> int:
        """Every row numbered below this has left memory."""
        if self._inflight:
            return self._inflight_from
        return self._enqueued - len(self._queue)

    def _notify(self) -> None:
        durable = self._durable_below()
        still_waiting = []
        for target, future in self._waiters:
            if durable >= target:
                if not future.done():
                    future.set_result(None)
            else:
                still_waiting.append((target, future))
        self._waiters = still_waiting
