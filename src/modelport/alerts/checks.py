"""What the periodic check looks at: the oldest queued media task, and the free space of the disks that
hold the data directory, the SQLite database and the local file store."""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.alerts.events import (
    STORAGE_LOW,
    STORAGE_LOW_RESOLVED,
    TASKS_BACKLOG,
    TASKS_BACKLOG_RESOLVED,
    OperatorEvent,
)
from modelport.alerts.state import alert_key
from modelport.clock import now_ms
from modelport.media.tasks import scans
from modelport.settings import AlertsSettings, Settings

BACKLOG_KEY = "tasks.backlog"


@dataclass(frozen=True, slots=True)
class Observation:
    """One alert's condition now: `alerting` True/False, or None when it is between its bounds (no change)."""

    key: str
    alerting: bool | None
    event: OperatorEvent


async def backlog(engine: AsyncEngine, settings: AlertsSettings) -> Observation:
    """Alerting while a queued task has waited longer than `task_backlog_seconds`; resolved once none has."""
    now = now_ms()
    threshold_ms = int(settings.task_backlog_seconds * 1000)
    found = await scans.backlog(engine, cutoff_ms=now - threshold_ms)
    data: dict[str, object] = {"queued": found.queued, "threshold_seconds": settings.task_backlog_seconds}
    if found.older_than_cutoff:
        assert found.oldest_created_at_ms is not None
        data["queued_over_threshold"] = found.older_than_cutoff
        data["oldest_task_id"] = found.oldest_id
        data["oldest_queued_seconds"] = round((now - found.oldest_created_at_ms) / 1000, 3)
        return Observation(BACKLOG_KEY, True, OperatorEvent(TASKS_BACKLOG, data))
    return Observation(BACKLOG_KEY, False, OperatorEvent(TASKS_BACKLOG_RESOLVED, data))


def storage_paths(settings: Settings) -> list[Path]:
    """The local directories whose disk matters, one per filesystem: the data directory (spill files,
    the secret key), the SQLite database's and the local file store's. None with PostgreSQL and S3."""
    candidates: list[Path] = []
    if settings.is_sqlite:
        database = make_url(settings.effective_database_url).database
        if database and database != ":memory:":
            candidates += [settings.data_dir, Path(database).parent]
    if settings.files.backend == "local":
        candidates += [settings.data_dir, settings.files.local_dir or settings.data_dir / "media"]
    seen: set[int] = set()
    out: list[Path] = []
    for path in candidates:
        existing = _existing(path.resolve())
        device = existing.stat().st_dev
        if device not in seen:
            seen.add(device)
            out.append(path.resolve())
    return out


def storage(path: Path, settings: AlertsSettings) -> Observation:
    """Alerting below either bound; resolved only above both by `storage_hysteresis_fraction`."""
    usage = shutil.disk_usage(_existing(path))
    free_percent = 100.0 * usage.free / usage.total if usage.total else 0.0
    bytes_bound, percent_bound = settings.storage_free_bytes, settings.storage_free_percent
    above = 1 + settings.storage_hysteresis_fraction
    low = (bytes_bound > 0 and usage.free < bytes_bound) or (percent_bound > 0 and free_percent < percent_bound)
    clear = (bytes_bound == 0 or usage.free >= bytes_bound * above) and (
        percent_bound == 0 or free_percent >= min(100.0, percent_bound * above)
    )
    host = socket.gethostname()
    data: dict[str, object] = {
        "host": host,
        "path": str(path),
        "free_bytes": usage.free,
        "total_bytes": usage.total,
        "free_percent": round(free_percent, 2),
        "threshold_bytes": bytes_bound,
        "threshold_percent": percent_bound,
    }
    alerting = True if low else False if clear else None
    event = OperatorEvent(STORAGE_LOW if low else STORAGE_LOW_RESOLVED, data)
    return Observation(alert_key("storage", host, str(path)), alerting, event)


def _existing(path: Path) -> Path:
    """The path, or its nearest existing parent (a directory made on first use)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
