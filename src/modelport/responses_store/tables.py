"""Stored Responses, per team.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table, Text

from modelport.storage.schema import metadata

# A response kept for `previous_response_id` (migration 0024): the response object as the client got it
# and the input items its request sent (not the chained ones), as JSON text. The id is the one the client
# saw (the gateway's own, or a same-protocol upstream's), unique within a team.
stored_responses = Table(
    "stored_responses",
    metadata,
    Column("team_id", String(64), primary_key=True),
    Column("id", String(200), primary_key=True),
    Column("previous_id", String(200), nullable=True),
    Column("input_items", Text, nullable=False),
    Column("response", Text, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Index("ix_stored_responses_expires_at_ms", "expires_at_ms"),
)
