"""The response cache's entries when no Redis is configured (with Redis they live there, shared).

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, LargeBinary, String, Table

from modelport.storage.schema import metadata

# One stored answer (migration 0026): the entry's bytes (`entry.Entry`), its size for the store's bound,
# when it stops being served and when it was last served (least recently used go first).
response_cache_entries = Table(
    "response_cache_entries",
    metadata,
    Column("team_id", String(40), primary_key=True),
    Column("digest", String(64), primary_key=True),
    Column("entry", LargeBinary, nullable=False),
    Column("size_bytes", Integer, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Column("used_at_ms", BigInteger, nullable=False),
    Index("ix_response_cache_entries_used_at_ms", "used_at_ms"),
)
