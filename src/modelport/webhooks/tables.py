"""The webhook outbox (deliveries and their attempts) and the teams' signing secrets.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, String, Table, Text

from modelport.storage.schema import metadata

webhook_secrets = Table(
    "webhook_secrets",
    metadata,
    Column("team_id", String(40), ForeignKey("teams.id"), primary_key=True),
    Column("secret", String(100), nullable=False),  # whsec_...
    Column("previous_secret", String(100), nullable=True),  # still signs until previous_until_ms
    Column("previous_until_ms", BigInteger, nullable=True),
    Column("created_at_ms", BigInteger, nullable=False),
)


# The outbox (webhooks/outbox.py): one row per event to deliver, written in the transaction of the change it reports.
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", String(64), primary_key=True),  # the `webhook-id` header, stable across retries
    # What the event reports (webhooks.registry): task | notification (a team's) | operator (team_id null).
    Column("source", String(16), nullable=False, default="task", server_default="task"),
    Column("task_id", String(64), ForeignKey("media_tasks.id"), nullable=True, index=True),
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=True),
    Column("url", Text, nullable=False),
    Column("event_type", String(32), nullable=False),
    Column("payload", Text, nullable=False),  # the exact JSON body every attempt sends
    # pending | delivered | failed (retries used up or result expired) | stopped (410 Gone)
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at_ms", BigInteger, nullable=False),
    Column("lease_until_ms", BigInteger, nullable=False, default=0),  # a sender holds the row until then
    # No attempt after it: a task's result expiry; the retry schedule's end for the other sources.
    Column("give_up_at_ms", BigInteger, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("ended_at_ms", BigInteger, nullable=True),
    Index("ix_webhook_deliveries_status_next", "status", "next_attempt_at_ms"),
    # A team's notification deliveries, newest first (GET /api/v1/notifications/deliveries), and pruning.
    Index("ix_webhook_deliveries_source_team_created", "source", "team_id", "created_at_ms"),
)


webhook_attempts = Table(
    "webhook_attempts",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("delivery_id", String(64), ForeignKey("webhook_deliveries.id"), nullable=False, index=True),
    Column("attempt", Integer, nullable=False),
    Column("started_at_ms", BigInteger, nullable=False),
    Column("duration_ms", BigInteger, nullable=False),
    Column("status_code", Integer, nullable=True),  # the receiver's HTTP status, if it answered
    Column("outcome", String(16), nullable=False),  # delivered | failed | gone | rate_limited
    Column("error", Text, nullable=True),
)
