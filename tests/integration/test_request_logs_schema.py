"""Migration 0002 matches its tables, and counts the rows logged before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.requestlog.tables import request_log_counts, request_logs
from modelport.storage.db import create_engine
from modelport.storage.migrate import alembic_config, upgrade_to_head
from modelport.storage.schema import all_tables
from tests.support.databases import BACKENDS, database_url

OURS = {"request_logs", "request_log_counts"}


def _upgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _ours(_obj: object, name: str | None, type_: str, _reflected: bool, _compare_to: object) -> bool:
    return type_ != "table" or name in OURS


def _differences(connection: Connection) -> list[object]:
    context = MigrationContext.configure(connection, opts={"compare_type": True, "include_object": _ours})
    return list(compare_metadata(context, all_tables()))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_upgrade_from_0001_counts_existing_rows_and_matches_the_tables(backend: str, tmp_path: Path) -> None:
    async with database_url(backend, tmp_path) as url:
        engine: AsyncEngine = create_engine(url)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(_upgrade, "0001")
                base = {"status": "success", "provider": "p", "model_name": "m", "endpoint": "chat", "cost_micros": 0}
                rows = [
                    {
                        **base,
                        "id": f"req_{i}",
                        "team_id": "team_1",
                        "created_at_ms": 3_600_000 * (i % 3) + i,
                        "svc_user_id": "user_0001" if i % 2 else None,
                    }
                    for i in range(10)
                ]
                await conn.execute(insert(request_logs), rows)
            await upgrade_to_head(engine)
            async with engine.connect() as conn:
                assert await conn.run_sync(_differences) == []
                result = await conn.execute(
                    select(request_log_counts.c.svc_user_id, func.sum(request_log_counts.c.n)).group_by(
                        request_log_counts.c.svc_user_id
                    )
                )
                assert dict(result.all()) == {"": 10, "user_0001": 5}
                hours = await conn.execute(
                    select(request_log_counts.c.hour, request_log_counts.c.n)
                    .where(request_log_counts.c.svc_user_id == "")
                    .order_by(request_log_counts.c.hour)
                )
                assert hours.all() == [(0, 4), (1, 3), (2, 3)]
        finally:
            await engine.dispose()
