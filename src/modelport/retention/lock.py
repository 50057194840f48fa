"""One pruner at a time across every process of a deployment.

PostgreSQL: a session advisory lock, tried (never waited for) on a connection held for the run; a process
that dies loses it with its connection. SQLite (one machine): an exclusive `flock` on a file beside the
database; the kernel drops it when the process dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

PG_PRUNER_LOCK = 7_236_023


@contextlib.asynccontextmanager
async def pruner_lock(engine: AsyncEngine, lock_file: Path) -> AsyncIterator[bool]:
    """Yields whether this process holds the lock (False: another pruner runs; skip this turn)."""
    if engine.dialect.name == "postgresql":
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            held = bool(await conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": PG_PRUNER_LOCK}))
            try:
                yield held
            finally:
                if held:
                    await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": PG_PRUNER_LOCK})
        return
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
