"""What the operator console reads across every team: request logs, media tasks, the queue.

Reads only: every change an operator makes goes through `operator.verbs.Operator`. Lists page by keyset
on (created_at_ms, id), newest first, through the `ix_*_created_id` indexes (or the team's own index when
a team is chosen), so a page costs the same at the millionth row as at the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, Table, func, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.keys import hash_key
from modelport.accounts.tables import api_keys, teams
from modelport.clock import now_ms
from modelport.errors import InvalidParameters
from modelport.media.tasks.states import UNFINISHED, TaskStatus
from modelport.media.tasks.tables import media_tasks
from modelport.requestlog.record import RequestStatus
from modelport.requestlog.tables import request_logs
from modelport.web.query_int import plain_int
from modelport.webhooks.states import DeliveryStatus
from modelport.webhooks.tables import webhook_deliveries

AnyRow = Row[*tuple[Any, ...]]
PAGE = 50
LOG_STATUSES = tuple(RequestStatus)
TASK_STATUSES = tuple(TaskStatus)


@dataclass(frozen=True, slots=True)
class Cursor:
    """The last row of a page: the next page holds the rows older than it."""

    created_at_ms: int
    id: str

    def encode(self) -> str:
        return f"{self.created_at_ms}:{self.id}"

    @classmethod
    def decode(cls, raw: str | None) -> Cursor | None:
        if not raw:
            return None
        at, _, row_id = raw.partition(":")
        created_at_ms = plain_int(at)
        if created_at_ms is None or not row_id or len(row_id) > 64:
            raise InvalidParameters("before is not a valid page cursor", param="before")
        return cls(created_at_ms, row_id)


@dataclass(frozen=True, slots=True)
class Page:
    rows: Sequence[AnyRow]
    next: Cursor | None  # None: this is the last page


def _older_than(table: Table, cursor: Cursor | None) -> list[ColumnElement[bool]]:
    if cursor is None:
        return []
    key = tuple_(table.c.created_at_ms, table.c.id)
    return [key < tuple_(cursor.created_at_ms, cursor.id)]


async def _page(engine: AsyncEngine, table: Table, columns: Sequence[Any], where: list[ColumnElement[bool]]) -> Page:
    # Deferred join: the page's ids come from an index; only those rows (and their teams' names) are read.
    ids = (
        select(table.c.id, table.c.created_at_ms)
        .where(*where)
        .order_by(table.c.created_at_ms.desc(), table.c.id.desc())
        .limit(PAGE + 1)
        .subquery("page_ids")
    )
    stmt = (
        select(*columns, teams.c.name.label("team_name"))
        .join_from(table, ids, table.c.id == ids.c.id)
        .outerjoin(teams, teams.c.id == table.c.team_id)
        .order_by(table.c.created_at_ms.desc(), table.c.id.desc())
    )
    async with engine.connect() as conn:
        found: Sequence[AnyRow] = (await conn.execute(stmt)).all()
    more = len(found) > PAGE
    rows = found[:PAGE]
    return Page(rows, Cursor(rows[-1].created_at_ms, rows[-1].id) if more else None)


@dataclass(frozen=True, slots=True)
class LogFilter:
    team_id: str | None = None
    model: str | None = None  # `<provider>/<name>`
    status: str | None = None
    svc_user_id: str | None = None
    lo_ms: int | None = None
    hi_ms: int | None = None


LOG_COLUMNS = (
    request_logs.c.id,
    request_logs.c.team_id,
    request_logs.c.created_at_ms,
    request_logs.c.status,
    request_logs.c.error,
    request_logs.c.provider,
    request_logs.c.model_name,
    request_logs.c.endpoint,
    request_logs.c.prompt_tokens,
    request_logs.c.completion_tokens,
    request_logs.c.cached_tokens,
    request_logs.c.cost_micros,
    request_logs.c.svc_user_id,
)


def _log_conditions(f: LogFilter) -> list[ColumnElement[bool]]:
    c = request_logs.c
    where: list[ColumnElement[bool]] = []
    if f.team_id is not None:
        where.append(c.team_id == f.team_id)
    if f.model:
        provider, _, name = f.model.partition("/")
        where += [c.provider == provider, c.model_name == name]
    if f.status:
        where.append(c.status == f.status)
    if f.svc_user_id:
        where.append(c.svc_user_id == f.svc_user_id)
    if f.lo_ms is not None:
        where.append(c.created_at_ms >= f.lo_ms)
    if f.hi_ms is not None:
        where.append(c.created_at_ms < f.hi_ms)
    return where


async def list_logs(engine: AsyncEngine, f: LogFilter, cursor: Cursor | None) -> Page:
    return await _page(engine, request_logs, LOG_COLUMNS, _log_conditions(f) + _older_than(request_logs, cursor))


async def get_log(engine: AsyncEngine, log_id: str) -> AnyRow | None:
    stmt = (
        select(request_logs, teams.c.name.label("team_name"))
        .outerjoin(teams, teams.c.id == request_logs.c.team_id)
        .where(request_logs.c.id == log_id)
    )
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).first()


@dataclass(frozen=True, slots=True)
class TaskFilter:
    team_id: str | None = None
    model: str | None = None
    status: str | None = None


TASK_COLUMNS = (
    media_tasks.c.id,
    media_tasks.c.team_id,
    media_tasks.c.model_id,
    media_tasks.c.status,
    media_tasks.c.frozen_micros,
    media_tasks.c.cost_micros,
    media_tasks.c.attempts,
    media_tasks.c.claimed_by,
    media_tasks.c.error_code,
    media_tasks.c.error_message,
    media_tasks.c.created_at_ms,
    media_tasks.c.ended_at_ms,
)


async def list_tasks(engine: AsyncEngine, f: TaskFilter, cursor: Cursor | None) -> Page:
    c = media_tasks.c
    where: list[ColumnElement[bool]] = []
    if f.team_id is not None:
        where.append(c.team_id == f.team_id)
    if f.model:
        where.append(c.model_id == f.model)
    if f.status:
        where.append(c.status == f.status)
    return await _page(engine, media_tasks, TASK_COLUMNS, where + _older_than(media_tasks, cursor))


@dataclass(frozen=True, slots=True)
class Worker:
    name: str  # host:pid:nonce of the process running the task
    running: int
    lease_until_ms: int


@dataclass(frozen=True, slots=True)
class QueueState:
    queued: int
    processing: int
    oldest_queued_ms: int | None
    expired_leases: int  # running tasks whose worker stopped renewing (the reconciler takes them over)
    workers: list[Worker]
    webhooks_pending: int


async def queue_state(engine: AsyncEngine) -> QueueState:
    """Queue depth from the task rows (the source of truth; the queue engine only says "look at X now")."""
    now = now_ms()
    c = media_tasks.c
    async with engine.connect() as conn:
        counts: dict[str, int] = dict(
            (
                await conn.execute(select(c.status, func.count()).where(c.status.in_(UNFINISHED)).group_by(c.status))
            ).all()
        )
        oldest = (await conn.execute(select(func.min(c.created_at_ms)).where(c.status == TaskStatus.QUEUED))).scalar()
        expired = (
            await conn.execute(
                select(func.count()).where(
                    c.status == TaskStatus.PROCESSING, or_(c.lease_until_ms.is_(None), c.lease_until_ms < now)
                )
            )
        ).scalar_one()
        workers = (
            await conn.execute(
                select(c.claimed_by, func.count(), func.max(c.lease_until_ms))
                .where(c.status == TaskStatus.PROCESSING, c.lease_until_ms >= now, c.claimed_by.is_not(None))
                .group_by(c.claimed_by)
                .order_by(c.claimed_by)
            )
        ).all()
        pending = (
            await conn.execute(select(func.count()).where(webhook_deliveries.c.status == DeliveryStatus.PENDING))
        ).scalar_one()
    return QueueState(
        queued=int(counts.get(TaskStatus.QUEUED, 0)),
        processing=int(counts.get(TaskStatus.PROCESSING, 0)),
        oldest_queued_ms=None if oldest is None else int(oldest),
        expired_leases=int(expired),
        workers=[Worker(str(name), int(n), int(lease)) for name, n, lease in workers],
        webhooks_pending=int(pending),
    )


async def find_keys(engine: AsyncEngine, query: str, *, limit: int = 50) -> Sequence[AnyRow]:
    """Keys of any team by key id, by the start of their prefix, or by the whole key (its hash is looked up,
    so a leaked key pasted here finds its record without the key ever being stored)."""
    query = query.strip()
    if not query:
        return []
    k = api_keys.c
    match = or_(k.id == query, k.key_hash == hash_key(query))
    if len(query) <= 16:
        match = or_(match, k.prefix.startswith(query, autoescape=True))
    stmt = (
        select(
            k.id,
            k.team_id,
            k.name,
            k.prefix,
            k.created_at_ms,
            k.revoked_at_ms,
            k.last_used_at_ms,
            teams.c.name.label("team_name"),
        )
        .join(teams, teams.c.id == k.team_id)
        .where(match)
        .order_by(k.created_at_ms.desc())
        .limit(limit)
    )
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).all()
