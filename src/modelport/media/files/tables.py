"""Media files: uploads and task results.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, String, Table

from modelport.storage.schema import metadata

media_files = Table(
    "media_files",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False, index=True),
    Column("type", String(16), nullable=False),
    Column("mime_type", String(128), nullable=False),
    Column("name", String(255), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("storage_key", String(512), nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False, index=True),
    # The task this file is a result of; None for uploads, the only files the upload quota counts.
    Column("task_id", String(64), nullable=True),
    Index("ix_media_files_team_created", "team_id", "created_at_ms"),
)
