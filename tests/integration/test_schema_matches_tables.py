"""The migrated schema is every feature's tables (`storage/schema.all_tables`), on both databases: moving a
table between features' `tables.py` never needs a migration, and a table or column added without one
fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.storage.db import create_engine
from modelport.storage.migrate import upgrade_to_head
from modelport.storage.schema import all_tables
from tests.support.databases import BACKENDS, database_url


def _differences(connection: Connection) -> list[object]:
    ours = set(all_tables().tables)

    def include(_obj: object, name: str | None, type_: str, reflected: bool, _compare_to: object) -> bool:
        # Tables of others (PgQueuer's, alembic_version, request_logs' partitions) are not ours to compare.
        return type_ != "table" or name in ours

    context = MigrationContext.configure(connection, opts={"compare_type": True, "include_object": include})
    return list(compare_metadata(context, all_tables()))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_migrated_schema_is_every_features_tables(backend: str, tmp_path: Path) -> None:
    async with database_url(backend, tmp_path) as url:
        engine: AsyncEngine = create_engine(url)
        try:
            await upgrade_to_head(engine)
            async with engine.connect() as conn:
                assert await conn.run_sync(_differences) == []
        finally:
            await engine.dispose()
