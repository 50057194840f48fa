"""Media tasks, and the hosted providers' shared concurrency slots.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Column, ForeignKey, Index, Integer, String, Table, Text

from modelport.storage.schema import metadata

media_tasks = Table(
    "media_tasks",
    metadata,
    Column("id", String(64), primary_key=True),  # the task_id clients see; also the queue's job key
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False),
    Column("model_id", String(200), nullable=False),
    # queued | processing | success | failed | cancelled; changed only by compare-and-swap updates
    Column("status", String(16), nullable=False),
    Column("input", JSON, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("frozen_micros", BigInteger, nullable=False),  # frozen at creation, released/charged once at the end
    Column("cost_micros", BigInteger, nullable=True),  # what the terminal transition charged
    Column("webhook_url", Text, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),  # runs started (a takeover after a crash adds one)
    Column("lease_until_ms", BigInteger, nullable=True),  # the running worker renews it; past it, others take over
    Column("claimed_by", String(128), nullable=True),  # the worker process of the latest run (host:pid:nonce)
    Column("deadline_ms", BigInteger, nullable=False),  # a task not ended by then fails and is refunded
    Column("resources", JSON, nullable=True),  # result files: file_id, type, width, height, format, role
    Column("result_metadata", JSON, nullable=True),
    Column("error_code", String(32), nullable=True),
    Column("error_message", Text, nullable=True),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("started_at_ms", BigInteger, nullable=True),
    Column("ended_at_ms", BigInteger, nullable=True),
    Column("result_expires_at_ms", BigInteger, nullable=True),
    Column("trace_parent", String(55), nullable=True),  # W3C traceparent of the creating request (tracing)
    Column("key_id", String(40), nullable=True),  # the creating key (migration 0015)
    # The key's spend period the freeze was held in (key_spend); None: the key had no spend limit.
    Column("key_period_ms", BigInteger, nullable=True),
    Column("progress", Integer, nullable=True),  # 0-100 while running (null: unknown), written at most every 0.5 s
    Column("webhook_events", String(200), nullable=True),  # chosen events, comma-separated; null: the terminal ones
    Column("result_retention_seconds", BigInteger, nullable=True),  # X-Result-Retention; null: the deployment's
    Index("ix_media_tasks_team_created", "team_id", "created_at_ms"),
    Index("ix_media_tasks_team_status", "team_id", "status"),
    Index("ix_media_tasks_status_lease", "status", "lease_until_ms"),
    Index("ix_media_tasks_created_id", "created_at_ms", "id"),  # the operator console's task list
    Index("ix_media_tasks_status_created", "status", "created_at_ms"),  # a queued task's queue_position
)


# Per-provider concurrency of hosted media providers, shared by every worker process (migration 0009).
upstream_slots = Table(
    "upstream_slots",
    metadata,
    Column("provider", String(64), primary_key=True),
    Column("slot", Integer, primary_key=True),
    Column("task_id", String(64), nullable=True),  # the task holding it; None: free
    Column("lease_until_ms", BigInteger, nullable=True),  # held until then unless renewed
)
