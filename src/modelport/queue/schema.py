"""PgQueuer's own tables on PostgreSQL, installed by `modelport migrate` beside our Alembic schema."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

if TYPE_CHECKING:
    from pgqueuer import Queries


async def _queries(conn: AsyncConnection) -> Queries:
    # Only on PostgreSQL: PgQueuer's asyncpg driver (and asyncpg) never load in an SQLite process.
    from pgqueuer import Queries
    from pgqueuer.adapters.drivers.asyncpg import AsyncpgDriver

    raw: Any = (await conn.get_raw_connection()).driver_connection
    return Queries(AsyncpgDriver(raw))


async def ensure_queue_schema(conn: AsyncConnection) -> None:
    """Install (or converge) PgQueuer's schema; a no-op on SQLite. Run under the migration lock."""
    if conn.dialect.name != "postgresql":
        return
    queries = await _queries(conn)
    if not await queries.schema_is_installed():
        await queries.install()
    else:
        await queries.upgrade()


async def queue_schema_installed(conn: AsyncConnection) -> bool:
    if conn.dialect.name != "postgresql":
        return True
    return await (await _queries(conn)).schema_is_installed()
