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
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    false,
    text,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

_HAS_PAYLOAD = "input IS NOT NULL OR result IS NOT NULL"

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
    # Set by an operator: the team's keys are refused on both hosts until it is cleared.
    Column("suspended_at_ms", BigInteger, nullable=True),
    # The team's request-log window in days (None: `retention.request_logs_days`; 0: kept forever).
    Column("log_days", Float, nullable=True),
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
    # Per-key limits (migration 0015); None: no limit beyond the team's. See accounts/limits.py.
    Column("spend_limit_micros", BigInteger, nullable=True),
    Column("spend_limit_period", String(8), nullable=True),  # day | week | month | total
    Column("models", JSON, nullable=True),  # model-id patterns (fnmatch) the key may use
    Column("rpm", Integer, nullable=True),
    Column("tpm", Integer, nullable=True),
    Column("expires_at_ms", BigInteger, nullable=True),
    Column("allowed_ips", JSON, nullable=True),  # CIDR strings
    Column("role", String(16), nullable=False, default="member", server_default="member"),  # member | admin
)

# A limited key's spend per period (period_start_ms: the UTC start of its day/week/month, 0 for `total`).
# `frozen_micros` is what credit reservations and media tasks hold against the limit; `spent_micros` what
# was charged. Moved only by atomic updates, like a team's balance (billing/key_budget.py).
key_spend = Table(
    "key_spend",
    metadata,
    Column("key_id", String(40), ForeignKey("api_keys.id"), primary_key=True),
    Column("period_start_ms", BigInteger, primary_key=True),
    Column("spent_micros", BigInteger, nullable=False, default=0),
    Column("frozen_micros", BigInteger, nullable=False, default=0),
)

# Console sessions: the signed cookie holds a random token, this table its SHA-256. A session is valid
# while its row exists and has not expired; sign-out, key revocation, team suspension and an operator's
# "end sessions" delete rows, so every process refuses the cookie from its next request on.
console_sessions = Table(
    "console_sessions",
    metadata,
    Column("id", String(64), primary_key=True),  # SHA-256 hex of the cookie's token
    Column("team_id", String(40), nullable=True, index=True),  # None for an operator session
    Column("key_id", String(40), nullable=True, index=True),  # the key a team signed in with
    Column("operator", Boolean, nullable=False, default=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False, index=True),  # created + session_max_seconds
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

# The ledger's totals per team, UTC day (created_at_ms // 86_400_000) and kind, bumped in the same
# transaction as every entry (modelport.billing.daily): the console's billing totals read these.
ledger_daily = Table(
    "ledger_daily",
    metadata,
    Column("team_id", String(40), primary_key=True),
    Column("day", BigInteger, primary_key=True),
    Column("kind", String(16), primary_key=True),
    Column("entries", BigInteger, nullable=False),
    Column("amount_micros", BigInteger, nullable=False),
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
    Column("key_id", String(40), nullable=True),  # the API key that made the request (none before 0008)
    # Cache writes (all, and the 1-hour share) and the price table applied (none before 0023).
    Column("cache_write_tokens", Integer, nullable=True),
    Column("cache_write_1h_tokens", Integer, nullable=True),
    Column("price_tier", String(16), nullable=True),
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
    # The task this file is a result of; None for uploads, the only files the upload quota counts.
    Column("task_id", String(64), nullable=True),
    Index("ix_media_files_team_created", "team_id", "created_at_ms"),
)

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

webhook_secrets = Table(
    "webhook_secrets",
    metadata,
    Column("team_id", String(40), ForeignKey("teams.id"), primary_key=True),
    Column("secret", String(100), nullable=False),  # whsec_...
    Column("previous_secret", String(100), nullable=True),  # still signs until previous_until_ms
    Column("previous_until_ms", BigInteger, nullable=True),
    Column("created_at_ms", BigInteger, nullable=False),
)

# The outbox: one row per event to deliver, written in the same transaction as the task's terminal state.
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", String(64), primary_key=True),  # the `webhook-id` header, stable across retries
    # What the event reports (storage.outbox): task | notification (a team's) | operator (team_id null).
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

# One row per settlement applied to the ledger, written in the same transaction: a settlement retried after
# an ambiguous failure or replayed from a spill file is applied once. Rows older than the retention below
# are pruned at start-up.
# A live credit reservation (billing.credit): its hold's ref, the process that owns it and the lease that
# process renews. A row goes when the reservation is settled; the sweep returns what expired ones hold.
credit_reservations = Table(
    "credit_reservations",
    metadata,
    Column("ref", String(64), primary_key=True),
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False, index=True),
    Column("owner", String(64), nullable=False, index=True),
    Column("amount_micros", BigInteger, nullable=False),  # the hold's amount
    Column("lease_until_ms", BigInteger, nullable=False, index=True),
    # Another process could not admit this team: the owner returns the unused part now.
    Column("wanted", Boolean, nullable=False, default=False, server_default=false()),
    Column("created_at_ms", BigInteger, nullable=False),
    # A reservation of a key with a spend limit also holds its amount in key_spend (key, period).
    Column("key_id", String(40), nullable=True, index=True),
    Column("key_period_ms", BigInteger, nullable=True),
)

settlement_keys = Table(
    "settlement_keys",
    metadata,
    Column("key", String(40), primary_key=True),
    Column("created_at_ms", BigInteger, nullable=False, index=True),
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

# Running totals of the retention pruner (modelport.retention), shared by every process: rows removed per
# table, archive files written, the last run. The operator console shows them (migration 0015).
retention_stats = Table(
    "retention_stats",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)


# The audit log (accounts/audit.py): append-only, one row per change by an operator or a team admin,
# inserted in the change's own transaction. `before`/`after` are JSON text with credentials masked.
audit_events = Table(
    "audit_events",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("at_ms", BigInteger, nullable=False, index=True),
    Column("team_id", String(40), nullable=True),  # the team the change is about; None: no team
    Column("actor_kind", String(24), nullable=False),
    Column("actor_key_id", String(40), nullable=True),
    Column("action", String(48), nullable=False),
    Column("target", String(120), nullable=False),
    Column("before", Text, nullable=True),
    Column("after", Text, nullable=True),
    Column("request_id", String(64), nullable=True),
    Column("client", String(64), nullable=True),
    Index("ix_audit_events_team_id_id", "team_id", "id"),
)

# A team's notification settings (accounts/notifications.py) and the state that makes each balance event
# fire once per crossing across processes (billing/notify.py): a flag set by a compare-and-set in the
# transaction that moves the money (and enqueues the event), cleared when the balance is back above.
team_notifications = Table(
    "team_notifications",
    metadata,
    Column("team_id", String(40), ForeignKey("teams.id"), primary_key=True),
    Column("url", Text, nullable=True),  # None: nothing is sent
    Column("balance_below_micros", BigInteger, nullable=True),
    Column("key_spend_percent", String(64), nullable=True),  # "80,100"
    Column("key_expiry_days", Integer, nullable=True),
    # balance.low sent for the current crossing (armed again when the balance is at or above the threshold).
    Column("balance_low_sent", Boolean, nullable=False, default=False, server_default=false()),
    # balance.exhausted sent since the last top-up.
    Column("exhausted_sent", Boolean, nullable=False, default=False, server_default=false()),
    Column("updated_at_ms", BigInteger, nullable=False),
)

# Key events sent (billing/notify.py): the primary key is what sends each once across processes:
# (key, 'key.spend_threshold', period start, percent) and (key, 'key.expiring', its expiry, 0).
notification_marks = Table(
    "notification_marks",
    metadata,
    Column("key_id", String(40), ForeignKey("api_keys.id"), nullable=False),
    Column("event", String(32), nullable=False),
    Column("period_ms", BigInteger, nullable=False),
    Column("percent", Integer, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    PrimaryKeyConstraint("key_id", "event", "period_ms", "percent"),
)

# Operator alerts (alerts/): the last state each alert reported, shared by every process. A change of state
# is a compare-and-set UPDATE in the transaction that writes its event to the webhook outbox, so two
# processes seeing the same change send one event (migration 0022).
operator_alert_state = Table(
    "operator_alert_state",
    metadata,
    # `deployment:<model>#<i>`, `tasks.backlog`, `storage:<host>:<path>`
    Column("key", String(300), primary_key=True),
    Column("alerting", Boolean, nullable=False),  # deployment down, backlog over the threshold, storage low
    Column("changed_at_ms", BigInteger, nullable=False),
    Column("event_id", String(64), nullable=True),  # the outbox row (`webhook-id`) of the change
)
