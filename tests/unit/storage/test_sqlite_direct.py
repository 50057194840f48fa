"""The direct SQLite connection of the batch writers: one transaction per call, following the engine's pool."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import create_async_engine

from modelport.accounts.tables import teams
from modelport.storage.db import create_engine
from modelport.storage.sqlite_direct import MultiRowInsert, compiled_sql, for_engine


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


# -- multi-row inserts -------------------------------------------------------------------------------


def _keys_table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute('CREATE TABLE keys ("key" TEXT PRIMARY KEY, created_at_ms INTEGER NOT NULL)')
    return conn


_KEYS_SQL = 'INSERT INTO keys ("key", created_at_ms) VALUES (:key, :created_at_ms) ON CONFLICT ("key") DO NOTHING'


def test_a_multi_row_insert_writes_every_row_in_statements_of_at_most_256() -> None:
    conn = _keys_table()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    rows = [{"key": f"k{i:04}", "created_at_ms": i} for i in range(600)]
    assert MultiRowInsert(_KEYS_SQL, ["key", "created_at_ms"]).run(conn, rows) == 600
    assert conn.execute("SELECT count(*), sum(created_at_ms) FROM keys").fetchone() == (600, sum(range(600)))
    inserts = [s for s in statements if s.startswith("INSERT")]
    assert len(inserts) == 3  # 256 + 256 + 88 rows
    assert all(s.endswith('ON CONFLICT ("key") DO NOTHING') for s in inserts)


def test_a_multi_row_insert_counts_only_new_rows_and_keeps_the_conflict_clause() -> None:
    conn = _keys_table()
    insert = MultiRowInsert(_KEYS_SQL, ["key", "created_at_ms"])
    assert insert.run(conn, [{"key": "a", "created_at_ms": 1}, {"key": "b", "created_at_ms": 2}]) == 2
    again = [{"key": "a", "created_at_ms": 9}, {"key": "c", "created_at_ms": 3}]
    assert insert.run(conn, again) == 1  # "a" was there: skipped, not replaced
    assert dict(conn.execute("SELECT * FROM keys").fetchall()) == {"a": 1, "b": 2, "c": 3}
    assert insert.run(conn, []) == 0


def test_a_multi_row_insert_stays_under_the_connections_parameter_limit() -> None:
    conn = _keys_table()
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 9)  # 4 rows of 2 columns per statement
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    rows = [{"key": f"k{i}", "created_at_ms": i} for i in range(10)]
    assert MultiRowInsert(_KEYS_SQL, ["key", "created_at_ms"]).run(conn, rows) == 10
    assert len([s for s in statements if s.startswith("INSERT")]) == 3
