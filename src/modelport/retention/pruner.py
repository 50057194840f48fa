"""The retention pruner: one asyncio task per process, one pruning run at a time across processes.

Every `retention.interval_seconds` (with jitter) the process that gets the lock (`lock.pruner_lock`), on
PostgreSQL, creates the coming days' partitions of `request_logs` and drops the expired ones
(`partitions.py`), empties old payloads, removes request log rows past their team's window (archiving them first when
`retention.archive` is on), removes expired finished tasks with their webhook rows, runs every registered
extra target, and on SQLite hands the freed pages back to the file system (`PRAGMA incremental_vacuum`, in
steps). Each step works in small batches with pauses, so serving keeps the database between them.

Another feature's table joins with `Pruner.register(target)`: a `PruneTarget` removes what has expired
and says how many rows per table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport import metrics
from modelport.clock import now_ms as wall_ms
from modelport.media.files.storage import FileStore
from modelport.progress import NO_PROGRESS, Progress
from modelport.responses_store.background import ExpiredBackground
from modelport.responses_store.conversations import ExpiredConversations
from modelport.responses_store.store import ExpiredResponses
from modelport.retention import partitions, stats
from modelport.retention.audit import AuditEvents
from modelport.retention.deliveries import EventDeliveries
from modelport.retention.lock import pruner_lock
from modelport.retention.logs import LogPruning, count_expired, prune_logs, prune_payloads
from modelport.retention.pacing import Pacing
from modelport.retention.tasks import prune_tasks
from modelport.services import ServiceKey
from modelport.settings import RetentionSettings

log = logging.getLogger("modelport.retention")
VACUUM_PAGES = 2000  # pages freed per incremental_vacuum step (8 MB at 4 KB pages)
MAX_VACUUM_STEPS = 100_000  # 800 GB: a bound, never reached
# The first run comes 5-10 minutes after start (sooner with a shorter interval): not a whole interval later,
# so processes restarted more often than the interval still prune, and not during start-up's own work.
FIRST_RUN_CAP_SECONDS = 600.0


class PruneTarget(Protocol):
    name: str

    async def prune(self, engine: AsyncEngine, now_ms: int) -> dict[str, int]:
        """Remove what has expired; returns rows removed per table."""
        ...


@dataclass
class RunReport:
    removed: dict[str, int] = field(default_factory=dict)  # table -> rows
    archive_files: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # step -> seconds it took, in run order

    def timed(self, phase: str, since: float) -> float:
        """Record `phase` as having run from `since` (time.monotonic()) until now; returns now."""
        now = time.monotonic()
        self.phases[phase] = now - since
        return now


class Pruner:
    def __init__(
        self,
        engine: AsyncEngine,
        settings: RetentionSettings,
        *,
        lock_file: Path,
        archive_store: FileStore | None = None,
        clock: Callable[[], int] = wall_ms,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self._lock_file = lock_file
        self._archive = archive_store if settings.archive else None
        self._pacing = Pacing.of(settings)
        self._clock = clock
        self._targets: list[PruneTarget] = []
        self._task: asyncio.Task[None] | None = None

    def register(self, target: PruneTarget) -> None:
        self._targets.append(target)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="retention-pruner")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        interval = self.settings.interval_seconds
        await asyncio.sleep(min(interval, FIRST_RUN_CAP_SECONDS) * random.uniform(0.5, 1.0))
        while True:
            try:
                report = await self.run_once()
                if report is not None and any(report.removed.values()):
                    phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.phases.items())
                    log.info("retention: removed %s in %.1f s (%s)", report.removed, report.seconds, phases)
            except Exception:
                log.exception("retention run failed; retrying next interval")
            # Jitter keeps the processes of one deployment from trying in lockstep.
            await asyncio.sleep(interval * random.uniform(0.8, 1.2))

    async def run_once(self, *, progress: Progress = NO_PROGRESS) -> RunReport | None:
        """One pruning run, or None when another process holds the lock. `progress` hears of the expired
        request log rows (the backlog that takes long) as they go."""
        async with pruner_lock(self.engine, self._lock_file) as held:
            if not held:
                return None
            return await self._prune(progress)

    async def _prune(self, progress: Progress) -> RunReport:
        s, now = self.settings, self._clock()
        started = time.monotonic()
        report = RunReport()
        removed = report.removed
        if progress is not NO_PROGRESS:
            progress.start(await count_expired(self.engine, s.request_logs_days, now))
        # Whole partitions first: their payloads are not emptied row by row just before they go.
        dropped = await self._partitions(now)
        progress.advance(dropped.rows)
        mark = report.timed("partitions", started)
        removed["request_logs.payloads"] = await prune_payloads(self.engine, s.log_payloads_days, self._pacing, now)
        plan = LogPruning(s.request_logs_days, self._pacing, self._archive)
        mark = report.timed("payloads", mark)
        logs = await prune_logs(self.engine, plan, now, on_rows=progress.advance)
        mark = report.timed("request_logs", mark)
        removed["request_logs"] = dropped.rows + logs.rows
        report.archive_files = dropped.archive_files + logs.archive_files
        tasks = await prune_tasks(self.engine, s.tasks_days, self._pacing, now)
        removed["media_tasks"], removed["webhook_deliveries"], removed["webhook_attempts"] = (
            tasks.tasks,
            tasks.deliveries,
            tasks.attempts,
        )
        mark = report.timed("tasks", mark)
        for target in self._targets:
            try:
                for table, rows in (await target.prune(self.engine, now)).items():
                    removed[table] = removed.get(table, 0) + rows
            except Exception:
                log.exception("retention target %s failed", target.name)
            mark = report.timed(target.name, mark)
        if self.engine.dialect.name == "sqlite" and any(v for k, v in removed.items() if not k.endswith(".payloads")):
            await self._give_space_back()
            report.timed("vacuum", mark)
        report.seconds = time.monotonic() - started
        await self._record(report, now)
        return report

    async def _partitions(self, now: int) -> partitions.Dropped:
        """PostgreSQL: create the coming days' partitions of `request_logs`, drop the days every team's window
        has passed (whole, not row by row); the rest is left to the batched deletes."""
        if not await partitions.is_partitioned(self.engine):
            return partitions.Dropped()
        today = now // partitions.DAY_MS
        created = await partitions.ensure_days(self.engine, today, today + partitions.AHEAD_DAYS)
        dropped = partitions.Dropped()
        days = await partitions.longest_window_days(self.engine, self.settings.request_logs_days)
        if days is not None:
            before = now - int(days * partitions.DAY_MS)
            dropped = await partitions.drop_expired(self.engine, before, self._archive, self.settings.batch_rows)
        if created or dropped.partitions:
            log.info(
                "retention: request_logs partitions: %d created ahead, %d dropped (%d rows)",
                created,
                dropped.partitions,
                dropped.rows,
            )
        return dropped

    async def _give_space_back(self) -> None:
        """SQLite: return the free pages to the file system a step at a time (auto_vacuum = INCREMENTAL),
        then empty the WAL file the run filled (a checkpoint that truncates it)."""
        try:
            step = f"PRAGMA incremental_vacuum({VACUUM_PAGES})"
            for _ in range(MAX_VACUUM_STEPS):
                started = time.monotonic()
                if not await self._sqlite_script("PRAGMA freelist_count", step):
                    break
                await self._pacing.pause_after(started)
            await self._sqlite_script(None, "PRAGMA wal_checkpoint(TRUNCATE)")
        except Exception:
            log.exception("retention: giving SQLite pages back failed; the next run tries again")

    async def _sqlite_script(self, unless_zero: str | None, script: str) -> bool:
        """Run `script` to completion (as a script: the driver's execute() steps a statement that returns no
        rows only once, and each step of incremental_vacuum frees one page), unless `unless_zero` reads 0."""
        async with self.engine.connect() as conn:
            if unless_zero is not None:
                value = int((await conn.exec_driver_sql(unless_zero)).scalar() or 0)
                await conn.rollback()
                if value == 0:
                    return False
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None  # an open pool connection
            await driver.executescript(script)
        return True

    async def _record(self, report: RunReport, now: int) -> None:
        totals = {stats.PRUNED_PREFIX + table: rows for table, rows in report.removed.items()}
        totals[stats.ARCHIVE_FILES] = report.archive_files
        async with self.engine.begin() as conn:
            await stats.bump(conn, totals)
        await stats.set_values(self.engine, {stats.LAST_RUN_AT_MS: now, stats.LAST_RUN_MS: int(report.seconds * 1000)})
        for table, rows in report.removed.items():
            if rows:
                metrics.RETENTION_PRUNED.labels(table).inc(rows)
        if report.archive_files:
            metrics.RETENTION_ARCHIVE_FILES.labels("request_logs").inc(report.archive_files)
        size = await stats.database_bytes(self.engine)
        if size is not None:
            metrics.DATABASE_SIZE.labels(self.engine.dialect.name).set(size)
        oldest = await stats.oldest_log_ms(self.engine)
        metrics.OLDEST_LOG_AGE.labels("request_logs").set(
            0 if oldest is None else max(0.0, (self._clock() - oldest) / 1000)
        )


def build_pruner(
    engine: AsyncEngine, settings: RetentionSettings, *, lock_file: Path, archive_store: FileStore | None
) -> Pruner:
    """The pruner with every table's target: what `serve` runs every interval and `modelport admin prune`
    runs once."""
    pruner = Pruner(engine, settings, lock_file=lock_file, archive_store=archive_store)
    pruner.register(AuditEvents(settings.audit_days))
    pruner.register(EventDeliveries(settings.tasks_days, Pacing.of(settings)))
    pruner.register(ExpiredResponses())
    pruner.register(ExpiredConversations())
    pruner.register(ExpiredBackground())
    return pruner


PRUNER: ServiceKey[Pruner] = ServiceKey("retention pruner")
