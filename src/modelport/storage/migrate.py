"""Schema migrations (Alembic), run programmatically on an async engine.

On PostgreSQL an advisory lock serialises concurrent migrators (several processes starting at once).
Whether the schema is up to date is `storage.schema_version` (plain SQL): only migrating imports Alembic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.progress import NO_PROGRESS, Progress
from modelport.queue.schema import ensure_queue_schema

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_PG_MIGRATION_LOCK = 7_236_001


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def _pending(config: Config, connection: Connection) -> int:
    """How many migrations `upgrade` will apply (`env.py` reports each as it is applied)."""
    current = MigrationContext.configure(connection).get_current_heads()
    return sum(1 for _ in ScriptDirectory.from_config(config).iterate_revisions("heads", current or "base"))


def _upgrade(connection: Connection, progress: Progress) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    if progress is not NO_PROGRESS:
        progress.start(_pending(config, connection))

        def applied(**_: Any) -> None:
            progress.advance(1)

        config.attributes["on_version_apply"] = applied
    command.upgrade(config, "head")


async def upgrade_to_head(engine: AsyncEngine, *, progress: Progress = NO_PROGRESS) -> None:
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        await conn.run_sync(_upgrade, progress)
        await ensure_queue_schema(conn)
