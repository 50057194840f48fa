"""Schema migrations (Alembic), run programmatically on an async engine.

On PostgreSQL an advisory lock serialises concurrent migrators (several processes starting at once).
Whether the schema is up to date is `storage.schema_version` (plain SQL): only migrating imports Alembic.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.queue.schema import ensure_queue_schema

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_PG_MIGRATION_LOCK = 7_236_001


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def _upgrade(connection: Connection) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


async def upgrade_to_head(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        await conn.run_sync(_upgrade)
        await ensure_queue_schema(conn)
