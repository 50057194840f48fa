"""Upgrades with data (issue 23 item 5): a database populated at every earlier schema head is migrated to
the current head, on SQLite and PostgreSQL, and keeps every row.

Each table as it exists at that revision (reflected, so the test needs no copy of old schemas) gets rows with
a value of its column's type in every column, foreign keys pointing at the rows of the referenced table.
After `upgrade_to_head` every one of those rows is still there (same primary keys, same values in the
columns that still exist), and the schema is the head's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.storage.db import create_engine
from modelport.storage.migrate import alembic_config, upgrade_to_head
from modelport.storage.schema_version import HEAD_REVISION, KNOWN_REVISIONS, applied_revisions
from tests.support.databases import BACKENDS, database_url

ROWS = 3
EARLIER = sorted(KNOWN_REVISIONS - {HEAD_REVISION})
NOW_MS = int(time.time() * 1000)


def _upgrade_to(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _value(table: str, column: sa.Column[Any], i: int) -> Any:
    kind = column.type
    if isinstance(kind, sa.Boolean):
        return i % 2 == 0
    if isinstance(kind, sa.Integer):  # BigInteger and SmallInteger too
        return NOW_MS - i * 1000 if column.name.endswith("_ms") else i + 1
    if isinstance(kind, sa.Float | sa.Numeric):
        return 1.5 + i
    if isinstance(kind, sa.JSON):
        return {"n": i}
    if isinstance(kind, sa.LargeBinary):  # BLOB, BYTEA
        return f"{i}-{table}.{column.name}".encode()
    if isinstance(kind, sa.String):  # Text, VARCHAR
        length = getattr(kind, "length", None) or 64
        return f"{i}-{table}.{column.name}"[:length]
    raise AssertionError(f"no test value for {table}.{column.name} ({kind!r})")


def _populate(connection: Connection) -> dict[str, list[dict[str, Any]]]:
    meta = sa.MetaData()
    meta.reflect(connection)
    skipped = {"alembic_version"}
    if connection.dialect.name == "postgresql":
        # A partition (request_logs' days, from 0020 on) is filled through its parent table.
        skipped |= set(connection.exec_driver_sql("SELECT relname FROM pg_class WHERE relispartition").scalars())
    written: dict[str, list[dict[str, Any]]] = {}
    for table in meta.sorted_tables:  # referenced tables first
        if table.name in skipped:
            continue
        rows = []
        for i in range(ROWS):
            row = {}
            for column in table.columns:
                fks = list(column.foreign_keys)
                if fks:
                    target = fks[0].column
                    row[column.name] = written[target.table.name][i][target.name]
                else:
                    row[column.name] = _value(table.name, column, i)
            rows.append(row)
        connection.execute(table.insert(), rows)
        written[table.name] = rows
    return written


def _read(connection: Connection, name: str) -> list[dict[str, Any]]:
    table = sa.Table(name, sa.MetaData(), autoload_with=connection)
    return [dict(r._mapping) for r in connection.execute(sa.select(table))]


def _same(value: Any, expected: Any) -> bool:
    if isinstance(expected, float) or isinstance(value, float):
        return float(value) == float(expected)
    return bool(value == expected)


async def _check(engine: AsyncEngine, written: dict[str, list[dict[str, Any]]]) -> None:
    async with engine.connect() as conn:
        assert await applied_revisions(conn) == {HEAD_REVISION}
        for name, rows in written.items():
            now = await conn.run_sync(_read, name)
            assert len(now) == len(rows), name
            for expected in rows:
                matches = [r for r in now if all(_same(r[k], v) for k, v in expected.items() if k in r)]
                assert matches, f"{name}: row {expected} lost or changed"
        if conn.dialect.name == "sqlite":
            assert (await conn.exec_driver_sql("PRAGMA auto_vacuum")).scalar() == 2  # INCREMENTAL (retention)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_every_earlier_head_upgrades_with_its_data(backend: str, tmp_path: Path) -> None:
    for revision in EARLIER:
        async with database_url(backend, tmp_path / revision) as url:
            engine = create_engine(url)
            try:
                async with engine.begin() as conn:
                    await conn.run_sync(_upgrade_to, revision)
                async with engine.begin() as conn:
                    written = await conn.run_sync(_populate)
                await upgrade_to_head(engine)
                await _check(engine, written)
            finally:
                await engine.dispose()
