"""Async engine creation for the two supported databases.

SQLite (embedded default) runs in WAL mode with a busy timeout. A write transaction (`engine.begin()`)
starts with `BEGIN IMMEDIATE`: a writer takes the write lock up front instead of upgrading a read lock
mid-way, which is what makes concurrent read-modify-write transactions fail with "database is locked".
A `engine.connect()` block never commits (nothing in modelport writes through one on SQLite), so it reads
in a deferred transaction: in WAL mode that is a snapshot that never waits for the write lock.

Why the split matters: SQLite's busy handler polls (sleeps of up to 100 ms, then tries again), so a
connection waiting for the write lock is not served in turn; while background work kept the lock busy,
a task lookup that had to take it waited seconds, and on a loaded machine past the 30 s timeout.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

SQLITE_BUSY_TIMEOUT_MS = 30_000
# The execution option that marks a connection made for `begin()` (a write transaction) on SQLite.
_WRITES = "modelport_writes"


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
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITES) else "BEGIN")

    return SQLiteEngine(engine.sync_engine)


class SQLiteEngine(AsyncEngine):
    """An SQLite engine whose `begin()` takes the write lock up front; `connect()` blocks read a snapshot
    (see the module docstring). The write connections come from the same pool, marked by an option."""

    def __init__(self, sync_engine: Engine) -> None:
        super().__init__(sync_engine)
        self._writer = AsyncEngine(sync_engine.execution_options(**{_WRITES: True}))

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        async with self._writer.connect() as conn, conn.begin():
            yield conn


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
    # sqlite3 binds int, float and str directly but sends every other value, None included, through its
    # adapter lookup, which on a miss formats and discards an AttributeError: ~0.2 us per NULL parameter,
    # half the cost of a request-log insert (most of its ~50 columns are NULL). With an adapter for None the
    # lookup hits. Process-wide and idempotent (the module keeps one adapter table).
    sqlite3.register_adapter(type(None), _null)
    sqlite3.register_adapter(bytes, bytes)  # the same for BLOBs: bytes(b) is b


def _null(_value: None) -> None:
    return None


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"
