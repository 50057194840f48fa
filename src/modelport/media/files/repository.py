"""SQL for the `media_files` table: one function per statement, the same on SQLite and PostgreSQL.

Deletions use `DELETE ... RETURNING`, so a caller removes stored bytes only for rows its own statement
deleted: two processes deleting (or sweeping) the same file never both act on it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.media.files.tables import media_files


@dataclass(frozen=True, slots=True)
class FileRecord:
    id: str
    team_id: str
    type: str
    mime_type: str
    name: str
    size_bytes: int
    storage_key: str
    created_at_ms: int
    expires_at_ms: int


@dataclass(frozen=True, slots=True)
class Usage:
    files: int
    bytes: int


def _record(row: Row[Any]) -> FileRecord:
    m = row._mapping
    return FileRecord(
        id=m["id"],
        team_id=m["team_id"],
        type=m["type"],
        mime_type=m["mime_type"],
        name=m["name"],
        size_bytes=int(m["size_bytes"]),
        storage_key=m["storage_key"],
        created_at_ms=int(m["created_at_ms"]),
        expires_at_ms=int(m["expires_at_ms"]),
    )


async def insert_within_quota(
    engine: AsyncEngine, record: FileRecord, *, max_files: int, max_bytes: int, now_ms: int
) -> bool:
    """Insert the file if the team stays within its quota with it; False (nothing inserted) if not.

    The check and the insert are one transaction, serialised per team: PostgreSQL takes a transaction
    advisory lock on the team (not a row lock on `teams`, which balance updates also need); SQLite
    transactions here start with BEGIN IMMEDIATE and so already run one writer at a time.
    """
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(select(func.pg_advisory_xact_lock(_lock_key(record.team_id))))
        usage = await _usage(conn, record.team_id, now_ms)
        if usage.files + 1 > max_files or usage.bytes + record.size_bytes > max_bytes:
            return False
        await insert_in(conn, record)
    return True


async def insert_in(conn: AsyncConnection, record: FileRecord, *, task_id: str | None = None) -> None:
    """Insert the file's row in the caller's transaction. `task_id`: a task's result (inserted with the
    task's success), listed with the team's files but outside its upload quota."""
    await conn.execute(
        insert(media_files).values(
            id=record.id,
            team_id=record.team_id,
            type=record.type,
            mime_type=record.mime_type,
            name=record.name,
            size_bytes=record.size_bytes,
            storage_key=record.storage_key,
            created_at_ms=record.created_at_ms,
            expires_at_ms=record.expires_at_ms,
            task_id=task_id,
        )
    )


def _lock_key(team_id: str) -> int:
    # A stable signed 64-bit key per team, namespaced so other advisory locks cannot collide by accident.
    digest = hashlib.sha256(b"media_files quota\n" + team_id.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def _usage(conn: AsyncConnection, team_id: str, now_ms: int) -> Usage:
    # Uploads only: task results (rows with a task_id) are listed with the team's files but never use up
    # the upload quota.
    query = select(func.count(), func.coalesce(func.sum(media_files.c.size_bytes), 0)).where(
        media_files.c.team_id == team_id, media_files.c.expires_at_ms > now_ms, media_files.c.task_id.is_(None)
    )
    count, total = (await conn.execute(query)).one()
    return Usage(files=int(count), bytes=int(total))


async def team_usage(engine: AsyncEngine, team_id: str, now_ms: int) -> Usage:
    """Uploaded files and bytes a team holds (what its upload quota counts); expired files not yet swept
    and task results do not count."""
    async with engine.connect() as conn:
        return await _usage(conn, team_id, now_ms)


async def list_files(
    engine: AsyncEngine, team_id: str, now_ms: int, *, limit: int, offset: int
) -> tuple[list[FileRecord], int]:
    live = (media_files.c.team_id == team_id, media_files.c.expires_at_ms > now_ms)
    page = (
        select(media_files)
        .where(*live)
        .order_by(media_files.c.created_at_ms.desc(), media_files.c.id.desc())
        .limit(limit)
        .offset(offset)
    )
    async with engine.connect() as conn:
        total = int((await conn.execute(select(func.count()).where(*live))).scalar_one())
        rows = (await conn.execute(page)).all()
    return [_record(r) for r in rows], total


async def get_live_file(engine: AsyncEngine, file_id: str, now_ms: int) -> FileRecord | None:
    query = select(media_files).where(media_files.c.id == file_id, media_files.c.expires_at_ms > now_ms)
    async with engine.connect() as conn:
        row = (await conn.execute(query)).first()
    return _record(row) if row is not None else None


async def delete_team_file(engine: AsyncEngine, team_id: str, file_id: str) -> FileRecord | None:
    """Delete one file of the team; the deleted row, or None if the team has no such file."""
    statement = (
        delete(media_files)
        .where(media_files.c.id == file_id, media_files.c.team_id == team_id)
        .returning(*media_files.c)
    )
    async with engine.begin() as conn:
        row = (await conn.execute(statement)).first()
    return _record(row) if row is not None else None


async def delete_expired(engine: AsyncEngine, now_ms: int, *, batch: int) -> list[FileRecord]:
    """Delete up to `batch` expired rows; returns exactly the rows this call deleted."""
    # SKIP LOCKED (PostgreSQL) lets concurrent sweepers take disjoint batches instead of queueing on
    # the same rows; SQLite ignores it and serialises writers anyway.
    expired = (
        select(media_files.c.id)
        .where(media_files.c.expires_at_ms <= now_ms)
        .order_by(media_files.c.expires_at_ms)
        .limit(batch)
        .with_for_update(skip_locked=True)
    )
    statement = delete(media_files).where(media_files.c.id.in_(expired)).returning(*media_files.c)
    async with engine.begin() as conn:
        rows = (await conn.execute(statement)).all()
    return [_record(r) for r in rows]
