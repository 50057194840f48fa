"""Retention: a team's own request-log window, an index of rows still holding payloads, SQLite space reuse

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-25 22:30:00

- `teams.log_days`: the team's request-log window in days (None: `retention.request_logs_days`; 0: forever).
- `ix_request_logs_payload_created`: a partial index over `created_at_ms` of the rows whose `input` or
  `result` is still set, so the pruner finds payloads to drop without walking rows already emptied.
- `retention_stats`: the pruner's running totals (rows removed per table, archive files, the last run).
- SQLite: `auto_vacuum = INCREMENTAL`, so the file gives back the pages pruning frees
  (`PRAGMA incremental_vacuum`). The mode of a file that has tables changes only with a VACUUM, which
  cannot run inside a transaction: what is migrated so far is committed first, and the migration goes on
  in a new transaction. VACUUM rewrites the whole file (about 1-3 s per GB; it needs that much free disk).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_HAS_PAYLOAD = "input IS NOT NULL OR result IS NOT NULL"


def upgrade() -> None:
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(sa.Column("log_days", sa.Float(), nullable=True))
    op.create_index(
        "ix_request_logs_payload_created",
        "request_logs",
        ["created_at_ms"],
        sqlite_where=sa.text(_HAS_PAYLOAD),
        postgresql_where=sa.text(_HAS_PAYLOAD),
    )
    op.create_table(
        "retention_stats",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_retention_stats")),
    )
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_incremental_vacuum()


def _sqlite_incremental_vacuum() -> None:
    conn = op.get_bind()
    if conn.exec_driver_sql("PRAGMA auto_vacuum").scalar() == 2:
        return
    # The engine runs SQLite with the driver's own transaction handling off (storage.db): these
    # statements are exactly what reaches SQLite.
    conn.exec_driver_sql("COMMIT")
    conn.exec_driver_sql("PRAGMA auto_vacuum = INCREMENTAL")
    conn.exec_driver_sql("VACUUM")
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def downgrade() -> None:
    op.drop_table("retention_stats")
    op.drop_index("ix_request_logs_payload_created", table_name="request_logs")
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_column("log_days")
