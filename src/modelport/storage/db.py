"""Async engine creation for the two supported databases.

SQLite (embedded default) runs in WAL mode with a busy timeout, and every transaction starts with
`BEGIN IMMEDIATE`: a writer takes the write lock up front instead of upgrading a read lock mid-way,
which is what makes concurrent read-modify-write transactions fail with "database is locked".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

SQLITE_BUSY_TIMEOUT_MS = 30_000


def create_engine(database_url: str, *, pool_size: int = 10) -> AsyncEngine:
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        return _create_sqlite_engine(database_url)
    return create_async_engine(
        database_url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        pool_recycle=1800,
    )


def _create_sqlite_engine(database_url: str) -> AsyncEngine:
    url = make_url(database_url)
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(
        database_url,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        pool_size=5,
        max_overflow=5,
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        configure_sqlite_connection(dbapi_connection)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def configure_sqlite_connection(dbapi_connection: Any) -> None:
    """Every SQLite connection's settings (the engine's and `sqlite_direct`'s)."""
    # Let us emit BEGIN ourselves (see module docstring).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"
