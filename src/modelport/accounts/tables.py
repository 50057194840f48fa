"""Teams, their API keys, console sessions, the audit log and a team's notification settings.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
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
    String,
    Table,
    Text,
    false,
)

from modelport.storage.schema import metadata

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
