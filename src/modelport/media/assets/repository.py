"""SQL for the `provider_assets` table: one function per statement, the same on SQLite and PostgreSQL.

Status changes are compare-and-swap (`WHERE status = 'processing'`), so a moderation pass that finishes
after the asset was deleted, or twice in two processes, changes nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import Row, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.tables import teams
from modelport.media.assets.states import AssetStatus
from modelport.media.assets.tables import provider_assets


@dataclasses.dataclass(frozen=True, slots=True)
class AssetRecord:
    id: str
    team_id: str
    provider: str
    type: str
    name: str | None
    status: str
    reason: str | None
    backend: str
    upstream_id: str | None
    storage_key: str | None
    mime_type: str
    size_bytes: int
    width: int | None
    height: int | None
    duration_ms: int | None
    source_url: str
    created_at_ms: int
    updated_at_ms: int


_FIELDS = [f.name for f in dataclasses.fields(AssetRecord)]


def _record(row: Row[Any]) -> AssetRecord:
    m = row._mapping
    return AssetRecord(**{name: m[name] for name in _FIELDS})


async def insert_asset(engine: AsyncEngine, record: AssetRecord) -> None:
    async with engine.begin() as conn:
        await conn.execute(insert(provider_assets).values(**dataclasses.asdict(record)))


async def get_asset(engine: AsyncEngine, team_id: str, asset_id: str) -> AssetRecord | None:
    query = select(provider_assets).where(provider_assets.c.id == asset_id, provider_assets.c.team_id == team_id)
    async with engine.connect() as conn:
        row = (await conn.execute(query)).first()
    return _record(row) if row is not None else None


async def list_assets(
    engine: AsyncEngine, team_id: str, *, status: str | None, limit: int, offset: int
) -> tuple[list[AssetRecord], int]:
    where = [provider_assets.c.team_id == team_id]
    if status is not None:
        where.append(provider_assets.c.status == status)
    page = (
        select(provider_assets)
        .where(*where)
        .order_by(provider_assets.c.created_at_ms.desc(), provider_assets.c.id.desc())
        .limit(limit)
        .offset(offset)
    )
    count = select(func.count()).select_from(provider_assets).where(*where)
    async with engine.connect() as conn:
        rows = (await conn.execute(page)).all()
        total = int((await conn.execute(count)).scalar_one())
    return [_record(r) for r in rows], total


async def finish_processing(
    engine: AsyncEngine, asset_id: str, *, status: AssetStatus, reason: str | None, now_ms: int
) -> bool:
    """processing → active/failed, once; False if the asset is gone or already settled."""
    query = (
        update(provider_assets)
        .where(provider_assets.c.id == asset_id, provider_assets.c.status == AssetStatus.PROCESSING)
        .values(status=status, reason=reason, updated_at_ms=now_ms)
    )
    async with engine.begin() as conn:
        return (await conn.execute(query)).rowcount == 1


async def processing_assets(engine: AsyncEngine, backend: str, limit: int = 1000) -> list[AssetRecord]:
    query = (
        select(provider_assets)
        .where(provider_assets.c.status == AssetStatus.PROCESSING, provider_assets.c.backend == backend)
        .order_by(provider_assets.c.created_at_ms)
        .limit(limit)
    )
    async with engine.connect() as conn:
        return [_record(r) for r in (await conn.execute(query)).all()]


async def delete_asset(engine: AsyncEngine, team_id: str, asset_id: str) -> AssetRecord | None:
    """Delete the team's asset; the deleted row, or None if there was none (this statement's alone)."""
    query = (
        delete(provider_assets)
        .where(provider_assets.c.id == asset_id, provider_assets.c.team_id == team_id)
        .returning(*provider_assets.c)
    )
    async with engine.begin() as conn:
        row = (await conn.execute(query)).first()
    return _record(row) if row is not None else None


async def asset_service_enabled(engine: AsyncEngine, team_id: str) -> bool:
    async with engine.connect() as conn:
        value = (await conn.execute(select(teams.c.asset_service).where(teams.c.id == team_id))).scalar()
    return bool(value)
