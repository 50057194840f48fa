"""A task's row as the rest of the feature reads it (`TaskRow`), a row to insert (`NewTask`), a result file
to record with the success (`StoredFile`), and the change notification every write of the row sends.

Who reads and writes the rows: `reads.py` (the API's reads), `transitions.py` (the status changes, each a
compare-and-swap checked against `states.TRANSITIONS`), `scans.py` (the reconciler's and the alerts'
scans over all teams).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.billing.key_budget import KeyHold
from modelport.media.files.repository import FileRecord
from modelport.media.tasks.states import TaskStatus

# PostgreSQL NOTIFY channel of task row changes (payload: the task id).
TASK_CHANNEL = "modelport_tasks"


@dataclass(frozen=True, slots=True)
class TaskRow:
    id: str
    team_id: str
    model_id: str
    status: TaskStatus
    input: dict[str, Any]
    seed: int
    frozen_micros: int
    cost_micros: int | None
    webhook_url: str | None
    attempts: int
    lease_until_ms: int | None
    deadline_ms: int
    resources: list[dict[str, Any]]
    metadata: dict[str, Any]
    error_code: str | None
    error_message: str | None
    created_at_ms: int
    started_at_ms: int | None
    ended_at_ms: int | None
    result_expires_at_ms: int | None
    trace_parent: str | None = None
    key_id: str | None = None
    key_period_ms: int | None = None  # the key's spend period the freeze is also held in (None: no limit)
    progress: int | None = None
    webhook_events: tuple[str, ...] | None = None  # None: the terminal events
    result_retention_seconds: int | None = None  # None: the deployment's


def row_of(r: Row[Any]) -> TaskRow:
    """A `media_tasks` row as a `TaskRow`."""
    return TaskRow(
        id=r.id,
        team_id=r.team_id,
        model_id=r.model_id,
        status=TaskStatus(r.status),
        input=dict(r.input),
        seed=int(r.seed),
        frozen_micros=int(r.frozen_micros),
        cost_micros=None if r.cost_micros is None else int(r.cost_micros),
        webhook_url=r.webhook_url,
        attempts=int(r.attempts),
        lease_until_ms=None if r.lease_until_ms is None else int(r.lease_until_ms),
        deadline_ms=int(r.deadline_ms),
        resources=list(r.resources or []),
        metadata=dict(r.result_metadata or {}),
        error_code=r.error_code,
        error_message=r.error_message,
        created_at_ms=int(r.created_at_ms),
        started_at_ms=None if r.started_at_ms is None else int(r.started_at_ms),
        ended_at_ms=None if r.ended_at_ms is None else int(r.ended_at_ms),
        result_expires_at_ms=None if r.result_expires_at_ms is None else int(r.result_expires_at_ms),
        trace_parent=r.trace_parent,
        key_id=r.key_id,
        key_period_ms=None if r.key_period_ms is None else int(r.key_period_ms),
        progress=None if r.progress is None else int(r.progress),
        webhook_events=tuple(r.webhook_events.split(",")) if r.webhook_events else None,
        result_retention_seconds=None if r.result_retention_seconds is None else int(r.result_retention_seconds),
    )


@dataclass(frozen=True, slots=True)
class NewTask:
    id: str
    team_id: str
    model_id: str
    input: dict[str, Any]
    seed: int
    price_micros: int
    webhook_url: str | None
    deadline_ms: int
    created_at_ms: int
    trace_parent: str | None = None
    key_id: str | None = None
    key: KeyHold | None = None  # the creating key's spend limit, held in the same transaction
    webhook_events: tuple[str, ...] | None = None
    result_retention_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A result file already in the store (`media.files.stored`); its row is inserted with the success
    transition."""

    file_id: str
    storage_key: str
    type: str
    mime_type: str
    name: str
    size_bytes: int
    width: int | None
    height: int | None
    format: str
    role: str

    def record(self, team_id: str, *, created_at_ms: int, expires_at_ms: int) -> FileRecord:
        return FileRecord(
            id=self.file_id,
            team_id=team_id,
            type=self.type,
            mime_type=self.mime_type,
            name=self.name,
            size_bytes=self.size_bytes,
            storage_key=self.storage_key,
            created_at_ms=created_at_ms,
            expires_at_ms=expires_at_ms,
        )


async def notify_in(conn: AsyncConnection, task_id: str) -> None:
    """On PostgreSQL, tell listening processes (live status streams) that the task's row changed; the
    notification is delivered at commit, so a listener always reads the new row."""
    if conn.dialect.name == "postgresql":
        await conn.execute(select(func.pg_notify(TASK_CHANNEL, task_id)))
