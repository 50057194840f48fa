"""PostgreSQL: request_logs range-partitioned by day (created_at_ms)

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 01:30:00

PostgreSQL only (SQLite is unchanged). `request_logs` becomes a declarative range-partitioned table on
`created_at_ms`, one partition per UTC day (`request_logs_pYYYYMMDD`, [day start, next day start) in UNIX
ms), plus `request_logs_default` for a row no day partition covers, so an insert never fails. The retention
pruner creates the coming days' partitions ahead and drops a day once it is older than every team's window
(`retention/partitions.py`).

The conversion, in one transaction under an ACCESS EXCLUSIVE lock on `request_logs` (reads and writes of
the log wait until it commits; see docs/deploy.md for the time per million rows): the days that hold rows
are read through the (created_at_ms, id) index (a loose index scan), the old table is renamed and loses its
indexes, the partitioned table is created with a partition for each of those days and the next 7, the rows
are copied, the old table is dropped, then the primary key and the indexes are built on the filled
partitions (faster than maintaining them row by row).

A partitioned table's unique constraints must include the partition key: the primary key becomes
(id, created_at_ms). Ids stay unique in practice (generated); the log writer's `ON CONFLICT DO NOTHING`
names no columns, so it matches this key on PostgreSQL and (id) on SQLite.
"""

from __future__ import annotations

import datetime as dt
import time

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

DAY_MS = 86_400_000
AHEAD_DAYS = 7
_HAS_PAYLOAD = "input IS NOT NULL OR result IS NOT NULL"
_COLUMNS = (
    "id, team_id, created_at_ms, status, error, provider, model_name, endpoint, prompt_tokens, "
    "completion_tokens, cached_tokens, cost_micros, svc_user_id, session_id, input, result, key_id"
)
_INDEXES = {
    "ix_request_logs_team_created_id": ["team_id", "created_at_ms", "id"],
    "ix_request_logs_team_user_created_id": ["team_id", "svc_user_id", "created_at_ms", "id"],
    "ix_request_logs_team_model_created_id": ["team_id", "model_name", "created_at_ms", "id"],
    "ix_request_logs_team_status_created_id": ["team_id", "status", "created_at_ms", "id"],
    "ix_request_logs_created_id": ["created_at_ms", "id"],
    "ix_request_logs_status_created_id": ["status", "created_at_ms", "id"],
}
_PAYLOAD_INDEX = "ix_request_logs_payload_created"
# Every day holding a row, each found by one index probe (not a scan of the table).
_DAYS_WITH_ROWS = f"""
WITH RECURSIVE d(day) AS (
    SELECT (SELECT min(created_at_ms) FROM request_logs) / {DAY_MS}
    UNION ALL
    SELECT (SELECT min(created_at_ms) FROM request_logs WHERE created_at_ms >= (d.day + 1) * {DAY_MS}) / {DAY_MS}
    FROM d WHERE d.day IS NOT NULL
)
SELECT day FROM d WHERE day IS NOT NULL
"""


def partition_name(day: int) -> str:
    return "request_logs_p" + dt.datetime.fromtimestamp(day * 86_400, tz=dt.UTC).strftime("%Y%m%d")


def _columns() -> list[sa.Column[object]]:
    return [
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=40), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("provider", sa.String(length=100), nullable=False),
        sa.Column("model_name", sa.String(length=200), nullable=False),
        sa.Column("endpoint", sa.String(length=32), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("cached_tokens", sa.Integer(), nullable=True),
        sa.Column("cost_micros", sa.BigInteger(), nullable=False),
        sa.Column("svc_user_id", sa.String(length=128), nullable=True),
        sa.Column("session_id", sa.String(length=128), nullable=True),
        sa.Column("input", sa.Text(), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("key_id", sa.String(length=40), nullable=True),
    ]


def _drop_indexes(table: str) -> None:
    for name in (*_INDEXES, _PAYLOAD_INDEX):
        op.execute(f"DROP INDEX IF EXISTS {name}")
    op.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS pk_request_logs")


def _create_indexes(primary_key: list[str]) -> None:
    op.create_primary_key("pk_request_logs", "request_logs", primary_key)
    for name, columns in _INDEXES.items():
        op.create_index(name, "request_logs", columns, unique=False)
    op.create_index(_PAYLOAD_INDEX, "request_logs", ["created_at_ms"], postgresql_where=sa.text(_HAS_PAYLOAD))


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    op.execute("LOCK TABLE request_logs IN ACCESS EXCLUSIVE MODE")
    op.execute("SET LOCAL maintenance_work_mem = '256MB'")  # the index builds below
    today = int(time.time() * 1000) // DAY_MS
    days = set(conn.execute(sa.text(_DAYS_WITH_ROWS)).scalars()) | set(range(today, today + AHEAD_DAYS + 1))
    op.rename_table("request_logs", "request_logs_unpartitioned")
    _drop_indexes("request_logs_unpartitioned")
    op.create_table("request_logs", *_columns(), postgresql_partition_by="RANGE (created_at_ms)")
    for day in sorted(days):
        op.execute(
            f"CREATE TABLE {partition_name(day)} PARTITION OF request_logs "
            f"FOR VALUES FROM ({day * DAY_MS}) TO ({(day + 1) * DAY_MS})"
        )
    op.execute("CREATE TABLE request_logs_default PARTITION OF request_logs DEFAULT")
    op.execute(f"INSERT INTO request_logs ({_COLUMNS}) SELECT {_COLUMNS} FROM request_logs_unpartitioned")
    op.drop_table("request_logs_unpartitioned")
    _create_indexes(["id", "created_at_ms"])
    op.execute("ANALYZE request_logs")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("LOCK TABLE request_logs IN ACCESS EXCLUSIVE MODE")
    op.rename_table("request_logs", "request_logs_partitioned")
    _drop_indexes("request_logs_partitioned")
    op.create_table("request_logs", *_columns())
    op.execute(f"INSERT INTO request_logs ({_COLUMNS}) SELECT {_COLUMNS} FROM request_logs_partitioned")
    op.execute("DROP TABLE request_logs_partitioned CASCADE")  # with its partitions
    _create_indexes(["id"])
