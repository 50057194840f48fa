"""The request log writer: rows leave the request path at once and reach the database in batches.

`record()` only appends to an in-memory queue. A background task inserts the queue in batches of up to
`max_batch` rows, at the latest `flush_interval` seconds after a row arrives (sooner when a full batch is
waiting). Inserts are idempotent on the request id (see `store.insert_logs`), so a failed batch is simply
retried, with exponential backoff, until it lands: no row is lost or duplicated by a database outage.

Outages and bounded memory, with a `spill_dir` (set one in production): once an insert fails and the
database does not answer `SELECT 1`, every row in memory, and every row recorded until an insert succeeds
again, goes to a spill file (see `spill.py`); the files are replayed (retrying until the database is back)
whenever the queue is empty. Rows also spill whenever `max_pending` rows are already waiting. Without a
`spill_dir`, the failed batch is retried in memory, up to `max_pending` rows wait behind it, and rows
beyond that are dropped and logged.

A batch that keeps failing while the database answers `SELECT 1` holds a bad row: it is split in halves
until the bad row is alone, and that row is logged and dropped (`stats.rejected`), so one bad row never
blocks the log.

Shutdown: `close()` drains the queue into the database; if the database still fails after
`close_timeout` seconds, the remainder goes to the spill file (replayed by the next process to start).

Crash bound: a hard kill (SIGKILL, power loss) loses the rows still in memory: those recorded in the last
`flush_interval` seconds plus the batch being inserted (at most `max_batch` rows). During an outage that
is also the bound with a `spill_dir` (rows recorded before the outage was detected); without one, up to
`max_pending` rows. Spilled rows survive a killed process (not a power cut: they are not fsynced).

Call `record()` from the event loop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.requestlog.record import LogRecord
from modelport.requestlog.spill import SpillFile
from modelport.requestlog.store import insert_logs

log = logging.getLogger("modelport.requestlog")


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


class RequestLogWriter:
    def __init__(
        self,
        engine: AsyncEngine,
        *,
        max_batch: int = 500,
        flush_interval: float = 0.2,
        max_pending: int = 50_000,
        spill_dir: Path | None = None,
        close_timeout: float = 10.0,
        retry_initial: float = 0.1,
        retry_max: float = 5.0,
    ) -> None:
        if max_batch < 1 or max_pending < max_batch:
            raise ValueError("need 1 <= max_batch <= max_pending")
        self._engine = engine
        self._max_batch = max_batch
        self._interval = flush_interval
        self._max_pending = max_pending
        self._spill = SpillFile(spill_dir) if spill_dir is not None else None
        self._close_timeout = close_timeout
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        self._queue: deque[LogRecord] = deque()
        self._inflight: list[LogRecord] = []
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

    def record(self, rec: LogRecord) -> None:
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
            self._task = asyncio.create_task(self._run(), name="request-log-writer")

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
        self._wake.set()
        await future

    async def close(self) -> None:
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
            log.exception("request log writer failed")
        leftovers = [*self._inflight, *self._queue]
        self._inflight, self._queue = [], deque()
        self._closed = True
        if leftovers:
            log.error("database unavailable at shutdown: %d log rows not written", len(leftovers))
            self._overflow(leftovers)
        self._notify()
        if self._spill is not None:
            self._spill.seal()

    # -- background task ---------------------------------------------------------------------------

    async def _run(self) -> None:
        await self._replay_spilled()
        while True:
            if not self._closing:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._interval)
                self._wake.clear()
            while self._queue:
                count = min(self._max_batch, len(self._queue))
                self._inflight_from = self._enqueued - len(self._queue)
                self._inflight = [self._queue.popleft() for _ in range(count)]
                await self._write(self._inflight, from_memory=True)
                self._inflight = []
                self._notify()
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
            log.exception("cannot replay request log spill files in %s", self._spill.directory)

    async def _write(self, batch: list[LogRecord], *, from_memory: bool) -> bool:
        """Insert until the batch lands, isolating and rejecting rows the database refuses while it answers.

        Returns True when, instead, the rows in memory went to the spill file because the database is
        unreachable (only for a batch from memory: a batch replayed from a spill file waits it out).
        """
        failures = 0
        while True:
            try:
                new = await insert_logs(self._engine, batch)
            except Exception as exc:
                failures += 1
                self.stats.failures += 1
                if await self._database_answers():
                    if len(batch) > 1:
                        half = len(batch) // 2
                        return (await self._write(batch[:half], from_memory=from_memory)
                                or await self._write(batch[half:], from_memory=from_memory))
                    if failures >= 2:
                        self.stats.rejected += 1
                        log.error("request log row %s rejected by the database: %s", batch[0].id, exc)
                        return False
                    continue
                if not self._database_down:
                    self._database_down = True
                    log.warning("request log database unreachable: %s", exc)
                if from_memory and self._spill_memory():
                    return True
                if not from_memory and self._closing:
                    raise _ReplayAbandoned from exc
                delay = min(self._retry_max, self._retry_initial * 2 ** (failures - 1))
                await asyncio.sleep(delay)
            else:
                if self._database_down:
                    self._database_down = False
                    log.warning("request log database is back")
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

    def _overflow(self, records: list[LogRecord]) -> None:
        """Rows that cannot wait in memory: to the spill file, else dropped."""
        if not self._try_spill(records):
            self.stats.dropped += len(records)
            log.error("request log rows dropped (no room in memory, no spill file): %d", len(records))

    def _try_spill(self, records: list[LogRecord]) -> bool:
        if self._spill is None:
            return False
        try:
            self.stats.spilled += self._spill.append(records)
        except OSError:
            log.exception("cannot write the request log spill file")
            return False
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
