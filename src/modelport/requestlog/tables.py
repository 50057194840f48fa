"""Text request logs and their per-hour counts and per-day usage.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text, text

from modelport.storage.schema import metadata

_HAS_PAYLOAD = "input IS NOT NULL OR result IS NOT NULL"

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
    Column("key_id", String(40), nullable=True),  # the API key that made the request (none before 0008)
    # Cache writes (all, and the 1-hour share) and the price table applied (none before 0023).
    Column("cache_write_tokens", Integer, nullable=True),
    Column("cache_write_1h_tokens", Integer, nullable=True),
    Column("price_tier", String(16), nullable=True),
    # The response cache (migration 0026): hit | miss | skip (None: the team's cache is off), and on a hit
    # what the team did not pay (the original cost less the hit's; the usage columns are what was served).
    Column("cache", String(8), nullable=True),
    Column("cache_saved_micros", BigInteger, nullable=True),
    # A Responses request's server-kept state: the response it followed and its conversation (none before 0027).
    Column("previous_response_id", String(200), nullable=True),
    Column("conversation_id", String(200), nullable=True),
    # The model that answered when a fallback model served the request (none: the requested one; none before 0028).
    Column("served_model", String(200), nullable=True),
    # `id` last: the log lists newest first by (created_at_ms, id), read from the index alone.
    Index("ix_request_logs_team_created_id", "team_id", "created_at_ms", "id"),
    Index("ix_request_logs_team_user_created_id", "team_id", "svc_user_id", "created_at_ms", "id"),
    # The console's filters by model and by status, newest first.
    Index("ix_request_logs_team_model_created_id", "team_id", "model_name", "created_at_ms", "id"),
    Index("ix_request_logs_team_status_created_id", "team_id", "status", "created_at_ms", "id"),
    # The operator console lists every team's rows newest first, and every team's failures.
    Index("ix_request_logs_created_id", "created_at_ms", "id"),
    Index("ix_request_logs_status_created_id", "status", "created_at_ms", "id"),
    # Rows still holding payloads, oldest first: what the retention pruner empties (migration 0015).
    Index(
        "ix_request_logs_payload_created",
        "created_at_ms",
        sqlite_where=text(_HAS_PAYLOAD),
        postgresql_where=text(_HAS_PAYLOAD),
    ),
)


# Text request usage per team, UTC day (created_at_ms // 86_400_000), key ('' unknown) and model. Kept in
# the same transaction as the `request_logs` insert (modelport.requestlog.store), for the rows really
# inserted, so the console's usage pages read a few hundred rows instead of millions of log rows.
usage_daily = Table(
    "usage_daily",
    metadata,
    Column("team_id", String(40), primary_key=True),
    Column("day", BigInteger, primary_key=True),
    Column("key_id", String(40), primary_key=True),
    Column("provider", String(100), primary_key=True),
    Column("model_name", String(200), primary_key=True),
    Column("requests", BigInteger, nullable=False),
    Column("errors", BigInteger, nullable=False),  # rows whose status is not `success`
    Column("prompt_tokens", BigInteger, nullable=False),
    Column("completion_tokens", BigInteger, nullable=False),
    Column("cached_tokens", BigInteger, nullable=False),
    Column("cost_micros", BigInteger, nullable=False),
    Column("cache_write_tokens", BigInteger, nullable=False, server_default="0"),
    Column("cache_write_1h_tokens", BigInteger, nullable=False, server_default="0"),
    # Response cache hits and misses, and the money the hits saved (migration 0026).
    Column("cache_hits", BigInteger, nullable=False, server_default="0"),
    Column("cache_misses", BigInteger, nullable=False, server_default="0"),
    Column("cache_saved_micros", BigInteger, nullable=False, server_default="0"),
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
