"""The media host's `Idempotency-Key`s (task creations, asset registrations, file uploads: `media/idempotency.py`).

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, PrimaryKeyConstraint, String, Table, Text

from modelport.storage.schema import metadata

# `Idempotency-Key`s of task creations, asset registrations and file uploads: the primary key makes concurrent
# duplicates (any process) yield one operation. `pending` while its first request runs (a request that died
# leaves it to `lease_until_ms`), `done` with the first answer's `data`; pruned after `expires_at_ms`.
idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False),
    Column("key", String(255), nullable=False),
    Column("fingerprint", String(64), nullable=False),  # sha256 of method, path, body hash (and webhook URL)
    Column("owner", String(32), nullable=False),  # the request that holds it while pending
    Column("state", String(8), nullable=False),  # pending | done
    Column("response", Text, nullable=True),  # the first answer's `data`, JSON
    Column("created_at_ms", BigInteger, nullable=False),
    Column("lease_until_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    PrimaryKeyConstraint("team_id", "key"),
    Index("ix_idempotency_keys_expires", "expires_at_ms"),
)
