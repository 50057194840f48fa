"""Migration 0014 adds `media_files.task_id` and marks the live results of existing tasks, so they stop
counting against the upload quota at once; uploads and expired results stay unmarked."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.tables import teams
from modelport.media.files.tables import media_files
from modelport.media.tasks.tables import media_tasks
from modelport.storage.db import create_engine
from modelport.storage.migrate import alembic_config, upgrade_to_head
from modelport.storage.schema import all_tables
from tests.support.databases import BACKENDS, database_url


def _upgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _media_files_differences(connection: Connection) -> list[object]:
    def ours(_obj: object, name: str | None, type_: str, _reflected: bool, _compare_to: object) -> bool:
        return type_ != "table" or name == "media_files"

    context = MigrationContext.configure(connection, opts={"compare_type": True, "include_object": ours})
    return list(compare_metadata(context, all_tables()))


def _file(file_id: str, name: str, expires_at_ms: int) -> dict[str, object]:
    return {
        "id": file_id,
        "team_id": "team_1",
        "type": "image",
        "mime_type": "image/png",
        "name": name,
        "size_bytes": 10,
        "storage_key": f"k/{file_id}",
        "created_at_ms": 1,
        "expires_at_ms": expires_at_ms,
    }


def _task(task_id: str, file_id: str, result_expires_at_ms: int) -> dict[str, object]:
    return {
        "id": task_id,
        "team_id": "team_1",
        "model_id": "local/sketch-image",
        "status": "success",
        "input": {},
        "seed": 1,
        "frozen_micros": 0,
        "attempts": 1,
        "deadline_ms": 1,
        "resources": [{"file_id": file_id, "type": "image", "format": "png", "role": "primary"}],
        "created_at_ms": 1,
        "result_expires_at_ms": result_expires_at_ms,
    }


@pytest.mark.parametrize("backend", BACKENDS)
async def test_live_results_are_marked_and_the_table_matches(backend: str, tmp_path: Path) -> None:
    later = int(time.time() * 1000) + 3_600_000
    async with database_url(backend, tmp_path) as url:
        engine: AsyncEngine = create_engine(url)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(_upgrade, "0013")
                await conn.execute(
                    insert(teams).values(
                        id="team_1",
                        name="t",
                        balance_micros=0,
                        frozen_micros=0,
                        tier="free",
                        asset_service=False,
                        log_retention=False,
                        created_at_ms=1,
                    )
                )
                await conn.execute(
                    insert(media_tasks), [_task("task_live", "file_r1", later), _task("task_old", "file_r2", 5)]
                )
                await conn.execute(
                    insert(media_files),
                    [
                        _file("file_r1", "task_live-1.png", later),
                        _file("file_r2", "task_old-1.png", 5),
                        # An upload named like a result is still an upload.
                        _file("file_up", "task_live-2.png", later),
                    ],
                )
            await upgrade_to_head(engine)
            async with engine.connect() as conn:
                assert await conn.run_sync(_media_files_differences) == []
                marked = dict((await conn.execute(select(media_files.c.id, media_files.c.task_id))).all())
            assert marked == {"file_r1": "task_live", "file_r2": None, "file_up": None}
        finally:
            await engine.dispose()
