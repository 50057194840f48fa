"""SQLite transactions: `engine.begin()` takes the write lock up front; `engine.connect()` reads a snapshot
without waiting for it (a lookup must not queue behind background writers, see storage/db.py)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.storage.db import create_engine


@asynccontextmanager
async def table_t(path: Path, *rows: int) -> AsyncIterator[AsyncEngine]:
    """An engine on a new database at `path` with table t holding `rows`."""
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
            for x in rows:
                await conn.execute(text("INSERT INTO t VALUES (:x)"), {"x": x})
        yield engine
    finally:
        await engine.dispose()


@contextmanager
def write_lock_held(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection (as another process would) holding the write lock with a change not committed."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO t VALUES (2)")
        yield other
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


def test_a_read_does_not_wait_for_the_write_lock(tmp_path: Path) -> None:
    async def run() -> None:
        async with table_t(tmp_path / "db.sqlite", 1) as engine:
            with write_lock_held(tmp_path / "db.sqlite"):

                async def read() -> int:
                    async with engine.connect() as conn:
                        return int((await conn.execute(text("SELECT count(*) FROM t"))).scalar_one())

                # Under BEGIN IMMEDIATE this waited for the busy timeout (30 s) and then failed.
                assert await asyncio.wait_for(read(), timeout=10) == 1  # the committed snapshot

    asyncio.run(run())


def test_a_write_transaction_takes_the_lock_before_its_first_statement(tmp_path: Path) -> None:
    async def run() -> None:
        async with table_t(tmp_path / "db.sqlite") as engine:

            async def read_then_write() -> int:
                async with engine.begin() as conn:
                    seen = int((await conn.execute(text("SELECT count(*) FROM t"))).scalar_one())
                    await conn.execute(text("INSERT INTO t VALUES (:x)"), {"x": seen + 10})
                    return seen

            with write_lock_held(tmp_path / "db.sqlite") as other:
                writer = asyncio.create_task(read_then_write())
                await asyncio.sleep(0.5)
                assert not writer.done()  # waiting for the lock
                other.execute("COMMIT")
            # It began after the other commit, so it read that row. A deferred BEGIN would have read the old
            # snapshot, and its insert (an upgrade from a stale read) failed with "database is locked".
            assert await asyncio.wait_for(writer, timeout=20) == 1
            async with engine.connect() as conn:
                rows = sorted(r[0] for r in await conn.execute(text("SELECT x FROM t")))
            assert rows == [2, 11]

    asyncio.run(run())
