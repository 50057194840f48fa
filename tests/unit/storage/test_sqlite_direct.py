"""The direct SQLite connection of the batch writers: one transaction per call, following the engine's pool."""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import create_async_engine

from modelport.accounts.tables import teams
from modelport.storage.db import configure_sqlite_connection, create_engine
from modelport.storage.sqlite_direct import IN_JSON_LIST, MultiRowInsert, compiled_sql, for_engine, json_list


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


def _open_files(path: Path) -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


async def test_an_engine_let_go_takes_its_thread_and_connection_with_it(tmp_path: Path) -> None:
    # No finalizer does this (one run by garbage collection inside a starting thread deadlocked in CI): the
    # direct connection goes with its engine, its thread ends and its file closes.
    path = tmp_path / "db" / "test.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    direct = for_engine(engine)
    assert direct is not None
    await direct.transaction(_create)
    worker = await direct.read(lambda _conn: threading.current_thread())
    assert worker.is_alive() and worker is not threading.current_thread()
    await engine.dispose()
    assert _open_files(path) == 1  # the direct connection's (the engine's pool has none left)
    del engine, direct
    gc.collect()
    await asyncio.to_thread(worker.join, 10)
    assert not worker.is_alive()
    gc.collect()  # a sqlite3 connection sits in a cycle with its statement cache: freed by the collector
    assert _open_files(path) == 0


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
    rows_per_statement = [s.split(" VALUES ", 1)[1].count("(") - 1 for s in inserts]
    assert rows_per_statement == [256, 256, 64, 16, 8]  # powers of two
    assert all(s.endswith('ON CONFLICT ("key") DO NOTHING') for s in inserts)


def test_batches_of_every_size_share_a_few_statement_texts() -> None:
    # sqlite3's statement cache is keyed by the SQL text: a text per batch size parsed each new size again.
    conn = _keys_table()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    insert = MultiRowInsert(_KEYS_SQL, ["key", "created_at_ms"])
    for size in range(1, 301):
        assert insert.run(conn, [{"key": f"s{size}-{i}", "created_at_ms": i} for i in range(size)]) == size
    assert conn.execute("SELECT count(*) FROM keys").fetchone() == (sum(range(1, 301)),)
    rows_per_statement = {s.split(" VALUES ", 1)[1].count("(") - 1 for s in statements if s.startswith("INSERT")}
    assert rows_per_statement == {1, 2, 4, 8, 16, 32, 64, 128, 256}


def test_null_and_blob_parameters_bind_as_null_and_blob() -> None:
    # `configure_sqlite_connection` registers adapters for None and bytes (a cheaper path, same values).
    conn = sqlite3.connect(":memory:")
    configure_sqlite_connection(conn)
    conn.execute("CREATE TABLE t (a, b, c)")
    conn.execute("INSERT INTO t VALUES (?, ?, ?)", (None, b"\x00\xff", "x"))
    assert conn.execute("SELECT a IS NULL, typeof(b), b, c FROM t").fetchone() == (1, "blob", b"\x00\xff", "x")


def test_a_json_list_matches_as_an_in_list_of_any_length() -> None:
    conn = _keys_table()
    conn.executemany("INSERT INTO keys VALUES (?, ?)", [(f"k{i}", i) for i in range(5)])
    sql = f"SELECT key FROM keys WHERE key {IN_JSON_LIST} ORDER BY key"
    assert [k for (k,) in conn.execute(sql, (json_list(["k1", "k3", "nope", 'q"uote']),))] == ["k1", "k3"]
    assert conn.execute(sql, (json_list([]),)).fetchall() == []


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
