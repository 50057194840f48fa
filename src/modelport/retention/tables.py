"""The retention pruner's running totals.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, String, Table

from modelport.storage.schema import metadata

# Running totals of the retention pruner (modelport.retention), shared by every process: rows removed per
# table, archive files written, the last run. The operator console shows them (migration 0015).
retention_stats = Table(
    "retention_stats",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)
