"""The schema, as SQLAlchemy Core tables: one definition for SQLite and PostgreSQL.

Conventions: ids are short prefixed strings; times are integer UNIX milliseconds (`*_ms`), which sort,
compare and index the same on both databases; money is integer micro-USD (`*_micros`, 1 USD = 1,000,000).
Alembic migrations under `migrations/versions/` must match this file.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

teams = Table(
    "teams",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    # Available balance: always equal to the sum of this team's ledger entries.
    Column("balance_micros", BigInteger, nullable=False, default=0),
    # Held for in-flight work (text request estimates, media tasks); not spendable, not in the ledger sum.
    Column("frozen_micros", BigInteger, nullable=False, default=0),
    Column("tier", String(40), nullable=False),
    Column("asset_service", Boolean, nullable=False, default=False),
    Column("log_retention", Boolean, nullable=False, default=False),
    Column("created_at_ms", BigInteger, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False, index=True),
    Column("name", String(100), nullable=True),
    Column("prefix", String(16), nullable=False),
    # SHA-256 of the whole key: keys are 256-bit random, so a fast hash is enough (no dictionary to guess from).
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("revoked_at_ms", BigInteger, nullable=True),
    Column("last_used_at_ms", BigInteger, nullable=True),
)

ledger_entries = Table(
    "ledger_entries",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False),
    # topup | charge | hold | release | adjust
    Column("kind", String(16), nullable=False),
    # Signed change of the available balance.
    Column("amount_micros", BigInteger, nullable=False),
    # The request, task or hold this entry belongs to.
    Column("ref", String(64), nullable=True),
    Column("note", String(255), nullable=True),
    Column("created_at_ms", BigInteger, nullable=False),
    Index("ix_ledger_entries_team_id_id", "team_id", "id"),
    Index("ix_ledger_entries_ref", "ref"),
)

catalog_models = Table(
    "catalog_models",
    metadata,
    # `<provider>/<name>` for text models, `<provider>/<model_id>` for media models.
    Column("slug", String(200), primary_key=True),
    Column("kind", String(8), nullable=False),  # text | media
    # The full entry (prices, deployments, media type, docs) as validated JSON.
    Column("spec", JSON, nullable=False),
    Column("active", Boolean, nullable=False, default=True),
    # file: imported from the catalog file (re-imported at start-up); admin: edited through the admin API
    # (a later file import leaves it alone).
    Column("managed_by", String(8), nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
)

request_logs = Table(
    "request_logs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("team_id", String(40), nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("error", Text, nullable=True),
    Column("provider", String(100), nullable=False),
    Column("model_name", String(200), nullable=False),
    Column("endpoint", String(32), nullable=False),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("cached_tokens", Integer, nullable=True),
    Column("cost_micros", BigInteger, nullable=False, default=0),
    Column("svc_user_id", String(128), nullable=True),
    Column("session_id", String(128), nullable=True),
    Column("input", Text, nullable=True),
    Column("result", Text, nullable=True),
    # `id` last: the log lists newest first by (created_at_ms, id), read from the index alone.
    Index("ix_request_logs_team_created_id", "team_id", "created_at_ms", "id"),
    Index("ix_request_logs_team_user_created_id", "team_id", "svc_user_id", "created_at_ms", "id"),
)

# Rows per team (svc_user_id '') and per team and end user, per hour of `created_at_ms`. Kept in the same
# transaction as the `request_logs` insert (modelport.requestlog.store) so `GET /v1/logs` can give an exact
# `total` and jump to a deep page without scanning a million index entries.
request_log_counts = Table(
    "request_log_counts",
    metadata,
    Column("team_id", String(40), primary_key=True),
    Column("svc_user_id", String(128), primary_key=True),
    Column("hour", BigInteger, primary_key=True),  # created_at_ms // 3_600_000
    Column("n", BigInteger, nullable=False),
)

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
    Index("ix_media_files_team_created", "team_id", "created_at_ms"),
)
