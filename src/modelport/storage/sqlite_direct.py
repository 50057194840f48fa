"""Batch writes on SQLite through one plain `sqlite3` connection in a thread of its own.

Through SQLAlchemy's async engine every statement costs four hand-offs to aiosqlite's thread and back
(cursor, execute, fetch, close), each a queue put, a thread wake-up and a wake-up of the event loop, plus
SQLAlchemy's per-statement work: a request-log batch (insert, two rollups, BEGIN, COMMIT) made ~40 of them,
more than all of its rows' own work on the batch sizes a busy gateway writes. Here a whole batch is one
function run in this module's thread, in one `BEGIN IMMEDIATE` transaction: one hand-off per batch.

The connection is set up as the engine's are (`db.configure_sqlite_connection`) and follows the engine's
pool: `engine.dispose()` closes it (the next batch opens the file again, so a database moved away is
noticed as it is by the pool), and so does any `sqlite3.OperationalError` (a file that went away, a
locked database after the busy timeout). Statements are SQLAlchemy constructs compiled once to SQLite's
SQL (`compiled_sql`): the same statements the engine would send.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import orjson
from sqlalchemy import Engine, event
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import ClauseElement

from modelport.storage.db import SQLITE_BUSY_TIMEOUT_MS, configure_sqlite_connection

R = TypeVar("R")
_DIALECT = sqlite.dialect(paramstyle="named")


def compiled_sql(stmt: ClauseElement, column_keys: Sequence[str] | None = None) -> str:
    """`stmt` as SQLite SQL with `:name` parameters (for `execute`/`executemany` with dicts)."""
    return str(stmt.compile(dialect=_DIALECT, column_keys=list(column_keys) if column_keys is not None else None))


class MultiRowInsert:
    """A compiled one-row `INSERT ... VALUES (:a, :b) [ON CONFLICT ...]` run as multi-row `VALUES (?, ?), (?, ?)`
    statements: one `sqlite3_step` for many rows.

    Why: `executemany` releases the GIL around every row's step and takes it back after, and each take-back
    while the event loop's thread holds the GIL is a forced switch between the threads (a wait, two context
    switches). Per request that was about a quarter of a fast-path request's CPU at 64 in flight
    (bench/README.md); a batch now costs a handful of switches whatever its size."""

    def __init__(self, one_row_sql: str, columns: Sequence[str]) -> None:
        start = one_row_sql.index(" VALUES (")
        end = one_row_sql.index(")", start)
        self._head = one_row_sql[:start] + " VALUES "
        self._tail = one_row_sql[end + 1 :]
        self._columns = tuple(columns)
        self._group = "(" + ", ".join("?" * len(self._columns)) + ")"
        self._sql: dict[int, str] = {}  # rows -> the statement's text

    def run(self, conn: sqlite3.Connection, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert `rows` (dicts with every column); returns how many rows the statements changed."""
        if not rows:
            return 0
        fits = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(self._columns)
        most = max(1, min(_ROWS_PER_STATEMENT, fits))
        changed = 0
        columns = self._columns
        first, left = 0, len(rows)
        while left:
            count = _statement_rows(left, most)
            chunk = rows[first : first + count]
            params = [row[name] for row in chunk for name in columns]
            sql = self._sql.get(count)
            if sql is None:
                sql = self._sql[count] = self._head + ",".join([self._group] * count) + self._tail
            changed += conn.execute(sql, params).rowcount
            first, left = first + count, left - count
        return changed


def _statement_rows(left: int, most: int) -> int:
    """The rows of the next statement: the largest power of two up to `left` and `most`.

    Why powers of two: the SQL text holds one `(?, ...)` group per row and sqlite3's statement cache is keyed
    by the text, so a batch of any other size was parsed and planned again (for a request-log row of ~50
    columns that cost more than inserting it): every batch is now made of at most nine cached statements."""
    return 1 << (min(left, most).bit_length() - 1)


# Rows per statement: large enough that a busy batch is one or two statements, small enough that SQLite's
# statement cache (keyed by the SQL text) stays useful. A power of two (`_statement_rows`).
_ROWS_PER_STATEMENT = 256


# Membership in a list of any length as one parameter: `column IN (SELECT value FROM json_each(?))` with
# `json_list(values)` bound. `IN (?, ?, ...)` is a new SQL text for every length, parsed and planned again.
IN_JSON_LIST = "IN (SELECT value FROM json_each(?))"


def json_list(values: Sequence[str]) -> str:
    return orjson.dumps(list(values)).decode()


class DirectSqlite:
    """One `sqlite3` connection to the engine's database file, used only from its own thread."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._pid = os.getpid()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="modelport-sqlite-writes")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # `reset` comes from the engine's thread (the event loop's)
        self._stale = False

    def _thread(self) -> ThreadPoolExecutor:
        if self._pid != os.getpid():
            # A forked child: the parent's thread and connection are not its own (a connection must not cross
            # a fork); start afresh.
            self._pid, self._conn, self._stale, self._lock = os.getpid(), None, False, threading.Lock()
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="modelport-sqlite-writes")
        return self._executor

    async def transaction(self, fn: Callable[[sqlite3.Connection], R]) -> R:
        """Run `fn(connection)` in one `BEGIN IMMEDIATE` transaction in this connection's thread: committed
        when it returns, rolled back when it raises."""
        return await asyncio.get_running_loop().run_in_executor(self._thread(), self._transaction, fn)

    def _transaction(self, fn: Callable[[sqlite3.Connection], R]) -> R:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    self._close()
            if isinstance(exc, sqlite3.OperationalError):
                self._close()  # as the pool drops a connection that failed: the next batch opens the file again
            raise
        return result

    async def read(self, fn: Callable[[sqlite3.Connection], R]) -> R:
        """Run `fn(connection)` in this connection's thread outside any explicit transaction (each statement
        reads the latest commit, as a pooled connection's would): for reads, which need no write lock."""
        return await asyncio.get_running_loop().run_in_executor(self._thread(), self._read, fn)

    def _read(self, fn: Callable[[sqlite3.Connection], R]) -> R:
        conn = self._connection()
        try:
            return fn(conn)
        except sqlite3.OperationalError:
            self._close()
            raise

    def _connection(self) -> sqlite3.Connection:
        with self._lock:
            stale, self._stale = self._stale, False
        if stale:
            self._close()
        if self._conn is None:
            conn = sqlite3.connect(self._path, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            try:
                configure_sqlite_connection(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()

    def reset(self) -> None:
        """The engine's pool was disposed: the connection is reopened before the next batch."""
        with self._lock:
            self._stale = True


_DIRECT: weakref.WeakKeyDictionary[Engine, DirectSqlite | None] = weakref.WeakKeyDictionary()


def for_engine(engine: AsyncEngine) -> DirectSqlite | None:
    """The engine's direct connection when it is a SQLite file (None: PostgreSQL or in-memory SQLite)."""
    sync_engine = engine.sync_engine
    try:
        return _DIRECT[sync_engine]
    except KeyError:
        pass
    direct: DirectSqlite | None = None
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and database != ":memory:" and not database.startswith("file:"):
        made = direct = DirectSqlite(database)
        event.listen(sync_engine, "engine_disposed", lambda _engine: made.reset())
        # No finalizer closes it: a finalizer runs wherever garbage collection happens to run, and one that
        # ran inside a starting thread while another thread's `submit` held the executors' global lock
        # deadlocked both (CI). When the engine goes, `made` goes with it (only the engine's listener and
        # `_DIRECT`'s entry hold it): its executor's own weakref callback ends the thread (a lock-free queue
        # put) and the connection closes as it is freed.
    _DIRECT[sync_engine] = direct
    return direct
