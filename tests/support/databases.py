"""Fresh, migrated databases for tests: a SQLite file and a throw-away PostgreSQL database.

PostgreSQL comes from MODELPORT_TEST_POSTGRES_URL (default: root@127.0.0.1:5432/test, trust auth). Each
use creates its own database and drops it afterwards. An unreachable server is an error, never a skip.

Migrated once per test process: the first `migrated_engine` of each kind runs every migration into a
template (a SQLite file, a PostgreSQL template database); later ones start from a copy of it
(`shutil.copyfile`, `CREATE DATABASE ... TEMPLATE`), which takes milliseconds instead of a migration run.
The migration tests themselves (fresh and upgrade-with-data) migrate their own databases and never use
these templates. `drop_templates` (run at the end of the session by tests/conftest.py) removes them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import secrets
import shutil
import tempfile
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

# Per test process (each xdist worker has its own): the migrated templates, made on first use.
_sqlite_template: Path | None = None
_postgres_template: str | None = None


def postgres_admin_url() -> str:
    return os.environ.get("MODELPORT_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def _asyncpg_dsn(sqlalchemy_url: str) -> str:
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin_connection() -> asyncpg.Connection:
    admin_url = postgres_admin_url()
    try:
        return await asyncpg.connect(_asyncpg_dsn(admin_url), timeout=10)
    except (OSError, asyncpg.PostgresError) as exc:
        raise RuntimeError(f"PostgreSQL is required for these tests and is unreachable at {admin_url}: {exc}") from exc


def _url_of(name: str) -> str:
    return make_url(postgres_admin_url()).set(database=name).render_as_string(hide_password=False)


async def _drop(name: str) -> None:
    conn = await _admin_connection()
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@asynccontextmanager
async def postgres_database(template: str | None = None) -> AsyncIterator[str]:
    """Create an empty database (or a copy of `template`); yield its SQLAlchemy URL; drop it."""
    name = "mp_test_" + secrets.token_hex(6)
    conn = await _admin_connection()
    try:
        await conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    finally:
        await conn.close()
    try:
        yield _url_of(name)
    finally:
        await _drop(name)


async def _migrate(url: str) -> None:
    engine = create_engine(url)
    try:
        await upgrade_to_head(engine)
    finally:
        await engine.dispose()


async def _migrated_sqlite_template() -> Path:
    global _sqlite_template
    if _sqlite_template is None:
        path = Path(tempfile.mkdtemp(prefix="mp-sqlite-template-")) / "template.db"
        await _migrate(f"sqlite+aiosqlite:///{path}")
        # The last connection's close checkpoints the WAL into the file: the file alone is the database.
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size:
            raise RuntimeError(f"the SQLite template kept a write-ahead log after its engine closed: {wal}")
        _sqlite_template = path
    return _sqlite_template


async def _migrated_postgres_template() -> str:
    global _postgres_template
    if _postgres_template is None:
        name = "mp_template_" + secrets.token_hex(6)
        conn = await _admin_connection()
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        await _migrate(_url_of(name))  # disposed: no connection stays, as CREATE ... TEMPLATE requires
        _postgres_template = name
    return _postgres_template


@asynccontextmanager
async def migrated_postgres_database() -> AsyncIterator[str]:
    """A database at the head of the migrations (a copy of this process's template); yield its URL; drop it."""
    async with postgres_database(template=await _migrated_postgres_template()) as url:
        yield url


def migrated_sqlite_file(target: Path) -> Path:
    """Copy this process's migrated SQLite template to `target` (made on first use), private (0600) as
    `serve` makes its own. Callable from sync code, also inside a running event loop (an async fixture)."""
    if _sqlite_template is None:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a thread of its own: no loop runs there
            pool.submit(asyncio.run, _migrated_sqlite_template()).result()
    assert _sqlite_template is not None
    shutil.copyfile(_sqlite_template, target)
    target.chmod(0o600)
    return target


@asynccontextmanager
async def database_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database of `backend` (migrations not run)."""
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
    elif backend == "postgres":
        async with postgres_database() as url:
            yield url
    else:
        raise ValueError(backend)


@asynccontextmanager
async def migrated_database_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """A database of `backend` at the head of the migrations, copied from this process's template."""
    if backend == "sqlite":
        target = tmp_path / "test.db"
        shutil.copyfile(await _migrated_sqlite_template(), target)
        yield f"sqlite+aiosqlite:///{target}"
    elif backend == "postgres":
        async with migrated_postgres_database() as url:
            yield url
    else:
        raise ValueError(backend)


@asynccontextmanager
async def migrated_engine(backend: str, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_database_url(backend, tmp_path) as url:
        engine = create_engine(url, pool_size=20)
        try:
            yield engine
        finally:
            await engine.dispose()


def drop_templates() -> None:
    """Remove this process's templates (end of the test session)."""
    global _sqlite_template, _postgres_template
    if _sqlite_template is not None:
        shutil.rmtree(_sqlite_template.parent, ignore_errors=True)
        _sqlite_template = None
    if _postgres_template is not None:
        asyncio.run(_drop(_postgres_template))
        _postgres_template = None
