"""Schema migrations (Alembic), run programmatically on an async engine.

On PostgreSQL an advisory lock serialises concurrent migrators (several processes starting at once).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.queue.schema import ensure_queue_schema, queue_schema_installed

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


def _current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def upgrade_to_head(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        await conn.run_sync(_upgrade)
        await ensure_queue_schema(conn)


@functools.cache
def head_revision() -> str | None:
    """The migrations' head; read from the scripts once per process (/readyz asks often)."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


@functools.cache
def known_revisions() -> frozenset[str]:
    return frozenset(rev.revision for rev in ScriptDirectory.from_config(alembic_config()).walk_revisions())


SchemaState = Literal["current", "behind", "ahead"]


async def schema_state(engine: AsyncEngine) -> SchemaState:
    """`current`: at this version's head; `behind`: `modelport migrate` is needed; `ahead`: a newer version
    migrated the database (a revision this version does not know). Migrations only add between consecutive
    releases, so a version whose schema is ahead keeps working: that is what makes rolling upgrades work."""
    async with engine.connect() as conn:
        current = await conn.run_sync(_current_revision)
        if not await queue_schema_installed(conn):
            return "behind"
    if current == head_revision():
        return "current"
    if current is not None and current not in known_revisions():
        return "ahead"
    return "behind"


async def is_up_to_date(engine: AsyncEngine) -> bool:
    return await schema_state(engine) == "current"
