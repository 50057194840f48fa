"""Writing log rows: the only code that inserts into `request_logs`.

Each batch goes in one transaction: `INSERT ... ON CONFLICT (id) DO NOTHING RETURNING id` (on SQLite, through
`storage.sqlite_direct`: the batch's rows at once, then row by row only if some were there already), then the
hourly counters and the daily usage rollups (`usage_daily`) of the rows that were really inserted are
bumped. A batch retried after an ambiguous failure (committed, but the acknowledgement was lost)
therefore neither duplicates a row nor counts it twice. Anything that later deletes log rows must
decrement `request_log_counts` (and, if the usage should follow, `usage_daily`) in the same way.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Insert, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.requestlog.record import LogRecord, RequestStatus
from modelport.requestlog.tables import request_log_counts, request_logs, usage_daily
from modelport.storage.sqlite_direct import MultiRowInsert, compiled_sql, for_engine

HOUR_MS = 3_600_000
DAY_MS = 86_400_000
_USAGE_FIELDS = (
    "requests",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_micros",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "cache_hits",
    "cache_misses",
    "cache_saved_micros",
)
ALL_USERS = ""  # the counter key for "every row of the team"; a real svc_user_id is never empty


def _insert(conn: AsyncConnection, table: Table) -> Any:
    """The dialect's INSERT construct, which has `on_conflict_do_nothing/update`."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def _counts_upsert(insert: Any) -> Any:
    return insert.on_conflict_do_update(
        index_elements=["team_id", "svc_user_id", "hour"],
        set_={"n": request_log_counts.c.n + insert.excluded.n},
    )


def _usage_upsert(insert: Any) -> Any:
    return insert.on_conflict_do_update(
        index_elements=["team_id", "day", "key_id", "provider", "model_name"],
        set_={name: usage_daily.c[name] + insert.excluded[name] for name in _USAGE_FIELDS},
    )


# SQLite's batches go through `sqlite_direct` (one hand-off per batch): the same statements, compiled once.
_LOG_COLUMNS = [c.key for c in request_logs.c]
_SQLITE_INSERT_LOG = compiled_sql(sqlite.insert(request_logs).on_conflict_do_nothing(), _LOG_COLUMNS)
_SQLITE_INSERT_LOGS = MultiRowInsert(_SQLITE_INSERT_LOG, _LOG_COLUMNS)
_SQLITE_BUMP_COUNTS = compiled_sql(
    _counts_upsert(sqlite.insert(request_log_counts)), ["team_id", "svc_user_id", "hour", "n"]
)
_SQLITE_BUMP_USAGE = compiled_sql(
    _usage_upsert(sqlite.insert(usage_daily)), ["team_id", "day", "key_id", "provider", "model_name", *_USAGE_FIELDS]
)


async def insert_logs(engine: AsyncEngine, records: Sequence[LogRecord]) -> int:
    """Insert the rows not yet present and count them; returns how many were new."""
    if not records:
        return 0
    rows = [r.as_row() for r in records]
    # A stable lock order: two writers replaying overlapping batches cannot deadlock on PostgreSQL.
    rows.sort(key=lambda r: r["id"])
    by_id = {r["id"]: r for r in rows}
    direct = for_engine(engine)
    if direct is not None:
        return await direct.transaction(lambda conn: _insert_sqlite(conn, list(by_id.values())))
    async with engine.begin() as conn:
        # No conflict target: the primary key is (id) on SQLite, (id, created_at_ms) on PostgreSQL's
        # partitioned table (migration 0020); a retried row has the same both.
        stmt: Insert = _insert(conn, request_logs).on_conflict_do_nothing()
        result = await conn.execute(stmt.returning(request_logs.c.id), list(by_id.values()))
        inserted = [by_id[row_id] for (row_id,) in result.all()]
        counts = _count_params(inserted)
        if counts:
            await conn.execute(_counts_upsert(_insert(conn, request_log_counts)), counts)
        usage = _usage_params(inserted)
        if usage:
            await conn.execute(_usage_upsert(_insert(conn, usage_daily)), usage)
    return len(inserted)


def _insert_sqlite(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int:
    """`insert_logs` in `sqlite_direct`'s thread and transaction."""
    conn.execute("SAVEPOINT logs")
    inserted = rows
    if _SQLITE_INSERT_LOGS.run(conn, rows) != len(rows):
        # Some were there already (a retried batch, a replayed spill file): row by row, to count only the new.
        conn.execute("ROLLBACK TO logs")
        inserted = [row for row in rows if conn.execute(_SQLITE_INSERT_LOG, row).rowcount]
    conn.execute("RELEASE logs")
    counts = _count_params(inserted)
    if counts:
        conn.executemany(_SQLITE_BUMP_COUNTS, counts)
    usage = _usage_params(inserted)
    if usage:
        conn.executemany(_SQLITE_BUMP_USAGE, usage)
    return len(inserted)


def _count_params(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    counts: Counter[tuple[str, str, int]] = Counter()
    for row in rows:
        hour = row["created_at_ms"] // HOUR_MS
        counts[(row["team_id"], ALL_USERS, hour)] += 1
        if row["svc_user_id"]:
            counts[(row["team_id"], row["svc_user_id"], hour)] += 1
    return [{"team_id": t, "svc_user_id": u, "hour": h, "n": n} for (t, u, h), n in sorted(counts.items())]


def _usage_params(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    sums: dict[tuple[str, int, str, str, str], list[int]] = {}
    for row in rows:
        key = (row["team_id"], row["created_at_ms"] // DAY_MS, row["key_id"] or "", row["provider"], row["model_name"])
        acc = sums.setdefault(key, [0] * len(_USAGE_FIELDS))
        acc[0] += 1
        acc[1] += row["status"] != RequestStatus.SUCCESS
        acc[2] += row["prompt_tokens"] or 0
        acc[3] += row["completion_tokens"] or 0
        acc[4] += row["cached_tokens"] or 0
        acc[5] += row["cost_micros"] or 0
        acc[6] += row["cache_write_tokens"] or 0
        acc[7] += row["cache_write_1h_tokens"] or 0
        cache = row.get("cache")
        acc[8] += cache == "hit"
        acc[9] += cache == "miss"
        acc[10] += row.get("cache_saved_micros") or 0
    # Sorted: concurrent writers lock the rollup rows in one order (no deadlock on PostgreSQL).
    return [
        {
            "team_id": t,
            "day": d,
            "key_id": k,
            "provider": p,
            "model_name": m,
            **dict(zip(_USAGE_FIELDS, acc, strict=True)),
        }
        for (t, d, k, p, m), acc in sorted(sums.items())
    ]
