"""Is the database schema at this version's migrations' head? Answered with plain SQL, without Alembic.

Alembic (with Mako and Pygments: ~11 MiB and ~0.25 s to import) is needed only to migrate; a serving
process asks the question at every start and on every `/readyz`, so the answer reads `alembic_version`
against the constants below. `tests/unit/storage/test_schema_version.py` checks that they equal what
Alembic computes from the scripts: a new migration fails that test until they are updated.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

# The head of storage/migrations/versions, and every revision of its history.
# 0029 was never used. 0030 (SCIM), 0031 (SCIM attributes), 0032 (background responses), 0033 (TOTP secrets
# sealed, stopped keys' reason), 0034 (OIDC identities): each branch's migration re-chained at its merge.
HEAD_REVISION = "0034"
KNOWN_REVISIONS = frozenset(f"{n:04d}" for n in range(1, 29)) | {"0030", "0031", "0032", "0033", "0034"}

SchemaState = Literal["current", "behind", "ahead"]

_TABLE_EXISTS = {
    "sqlite": "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'",
    # to_regclass follows the search_path, as Alembic's default version table does.
    "postgresql": "SELECT count(*) FROM (SELECT to_regclass('alembic_version') AS t) AS r WHERE r.t IS NOT NULL",
}


async def applied_revisions(conn: AsyncConnection) -> set[str]:
    """The revisions recorded in `alembic_version` (empty: never migrated)."""
    exists = await conn.scalar(text(_TABLE_EXISTS[conn.dialect.name]))
    if not exists:
        return set()
    return set((await conn.scalars(text("SELECT version_num FROM alembic_version"))).all())


def state_of(applied: set[str]) -> SchemaState:
    """`current`: at this version's head; `behind`: `modelport migrate` is needed; `ahead`: a newer version
    migrated the database (a revision this version does not know). Migrations only add between consecutive
    releases, so a version whose schema is ahead keeps working: that is what makes rolling upgrades work."""
    if applied == {HEAD_REVISION}:
        return "current"
    if applied - KNOWN_REVISIONS:
        return "ahead"
    return "behind"


def sqlite_state(path: Path) -> SchemaState:
    """The same answer for an SQLite file, synchronously (the standard library's driver, reading only; no
    event loop): `serve` asks it before its first loop starts. A missing file is `behind`."""
    if not path.exists():
        return "behind"
    conn = sqlite3.connect(path, timeout=30)
    try:
        if not conn.execute(_TABLE_EXISTS["sqlite"]).fetchone()[0]:
            return "behind"
        return state_of({row[0] for row in conn.execute("SELECT version_num FROM alembic_version")})
    finally:
        conn.close()


async def schema_state(engine: AsyncEngine) -> SchemaState:
    async with engine.connect() as conn:
        applied = await applied_revisions(conn)
        if conn.dialect.name == "postgresql":
            # PgQueuer's tables (SQLite has none); imported here so that the CLI of `serve --workers N`,
            # which never runs the queue, does not load PgQueuer.
            from modelport.queue.schema import queue_schema_installed

            if not await queue_schema_installed(conn):
                return "behind"
    return state_of(applied)
