"""Fresh, migrated databases for tests: a SQLite file and a throw-away PostgreSQL database.

PostgreSQL comes from MODELPORT_TEST_POSTGRES_URL (default: root@127.0.0.1:5432/test, trust auth). Each
use creates its own database and drops it afterwards. An unreachable server is an error, never a skip.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.storage.db import create_engine
from modelport.storage.migrate import upgrade_to_head

DEFAULT_POSTGRES_URL = "postgresql+asyncpg://root@127.0.0.1:5432/test"
BACKENDS = ("sqlite", "postgres")


def postgres_admin_url() -> str:
    return os.environ.get("MODELPORT_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def _asyncpg_dsn(sqlalchemy_url: str) -> str:
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """Create an empty database; yield its SQLAlchemy URL; drop it."""
    admin_url = postgres_admin_url()
    name = "mp_test_" + secrets.token_hex(6)
    try:
        conn = await asyncpg.connect(_asyncpg_dsn(admin_url), timeout=10)
    except (OSError, asyncpg.PostgresError) as exc:
        raise RuntimeError(f"PostgreSQL is required for these tests and is unreachable at {admin_url}: {exc}") from exc
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        conn = await asyncpg.connect(_asyncpg_dsn(admin_url), timeout=10)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


@asynccontextmanager
async def database_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
    elif backend == "postgres":
        async with postgres_database() as url:
            yield url
    else:
        raise ValueError(backend)


@asynccontextmanager
async def migrated_engine(backend: str, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with database_url(backend, tmp_path) as url:
        engine = create_engine(url, pool_size=20)
        try:
            await upgrade_to_head(engine)
            yield engine
        finally:
            await engine.dispose()
