"""The direct SQLite connection of the batch writers: one transaction per call, following the engine's pool."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import create_async_engine

from modelport.storage.db import create_engine
from modelport.storage.sqlite_direct import compiled_sql, for_engine
from modelport.storage.tables import teams


def _create(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")


def _insert(k: int, *, fail: bool = False) -> Callable[[sqlite3.Connection], int]:
    def run(conn: sqlite3.Connection) -> int:
        conn.execute("INSERT INTO t (k) VALUES (?)", (k,))
        if fail:
            raise ValueError("refused after the insert")
        return k

    return run


def _keys(conn: sqlite3.Connection) -> list[int]:
    return [k for (k,) in conn.execute("SELECT k FROM t ORDER BY k")]


async def test_a_transaction_commits_what_returns_and_rolls_back_what_raises(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'db' / 'test.db'}")
    direct = for_engine(engine)
    assert direct is not None and for_engine(engine) is direct  # one per engine
    await direct.transaction(_create)
    assert await direct.transaction(_insert(1)) == 1
    with pytest.raises(ValueError):
        await direct.transaction(_insert(2, fail=True))
    assert await direct.read(_keys) == [1]
    await engine.dispose()


async def test_disposing_the_engine_makes_the_next_call_open_the_file_again(tmp_path: Path) -> None:
    home, away = tmp_path / "db", tmp_path / "db.away"
    engine = create_engine(f"sqlite+aiosqlite:///{home / 'test.db'}")
    direct = for_engine(engine)
    assert direct is not None
    await direct.transaction(_create)
    home.rename(away)
    await engine.dispose()  # as the pool does: no connection kept to a file that moved away
    with pytest.raises(sqlite3.OperationalError):
        await direct.transaction(_insert(1))
    away.rename(home)
    await direct.transaction(_insert(2))
    assert await direct.read(_keys) == [2]
    await engine.dispose()


def test_only_a_sqlite_file_has_a_direct_connection() -> None:
    assert for_engine(create_async_engine("sqlite+aiosqlite:///:memory:")) is None
    assert for_engine(create_engine("postgresql+asyncpg://root@127.0.0.1:5432/none")) is None


def test_statements_compile_to_sqlite_sql_with_named_parameters() -> None:
    sql = compiled_sql(select(teams.c.balance_micros).where(teams.c.id == bindparam("team_id")))
    assert sql.split() == ["SELECT", "teams.balance_micros", "FROM", "teams", "WHERE", "teams.id", "=", ":team_id"]
