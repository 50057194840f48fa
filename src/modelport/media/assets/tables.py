"""Provider assets (the embedded asset library's and an upstream asset API's).

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, String, Table, Text

from modelport.storage.schema import metadata

provider_assets = Table(
    "provider_assets",
    metadata,
    Column("id", String(64), primary_key=True),  # the asset_id clients see
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False),
    Column("provider", String(32), nullable=False),
    Column("type", String(8), nullable=False),  # image | video | audio (detected from the bytes)
    Column("name", String(64), nullable=True),
    Column("status", String(16), nullable=False),  # processing | active | failed
    Column("reason", String(255), nullable=True),  # why it failed
    Column("backend", String(16), nullable=False),  # embedded | http: which library holds it
    Column("upstream_id", String(128), nullable=True),  # the http backend's id of the asset
    Column("storage_key", String(512), nullable=True),  # the embedded library's stored bytes
    Column("mime_type", String(128), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("width", Integer, nullable=True),
    Column("height", Integer, nullable=True),
    Column("duration_ms", BigInteger, nullable=True),
    Column("source_url", Text, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    Index("ix_provider_assets_team_created_id", "team_id", "created_at_ms", "id"),
    Index("ix_provider_assets_team_status_created_id", "team_id", "status", "created_at_ms", "id"),
    Index("ix_provider_assets_status", "status"),
)
