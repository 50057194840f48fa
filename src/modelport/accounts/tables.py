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
    UniqueConstraint,
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
    # The response cache (migration 0026): off | team (shared by the team's keys) | key (per key), and
    # whether answers that call tools are stored too (docs/api/cache.md). Server defaults only: an insert that
    # does not name them (a test writing an older revision's row) must not send them.
    Column("cache", String(8), nullable=False, server_default="off"),
    Column("cache_tool_calls", Boolean, nullable=False, server_default=false()),
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
    # Who made the key (a user id; None: the admin token, the CLI or a team key) and, for a personal key,
    # the person it belongs to: it stops working when they leave the team or are disabled (migration 0025).
    Column("created_by", String(40), nullable=True),
    Column("owner_user_id", String(40), nullable=True, index=True),
    # Why a revoked key stopped (migration 0033; accounts/users.py): owner_disabled (enabling the owner brings
    # it back), owner_left (left the team), revoked (by a person or the operator); None on older revocations.
    Column("stopped_reason", String(16), nullable=True),
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
    # The person signed in (accounts/users.py; migration 0025); None for a key or admin-token session.
    Column("user_id", String(40), nullable=True, index=True),
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
    # The person who acted (actor kind `user`; migration 0025), with their email at the time.
    Column("actor_user_id", String(40), nullable=True),
    Column("actor_email", String(320), nullable=True),
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


# People (accounts/users.py, migration 0025): a console account, optionally an operator, a member of teams.
users = Table(
    "users",
    metadata,
    Column("id", String(40), primary_key=True),  # usr_...
    Column("email", String(320), nullable=False),  # as the person typed it
    Column("email_key", String(320), nullable=False, unique=True),  # lower-cased: unique case-insensitively
    Column("name", String(100), nullable=True),
    Column("status", String(16), nullable=False),  # active | disabled
    Column("password_hash", String(200), nullable=True),  # argon2id; None until the setup link is used
    Column("operator_role", String(24), nullable=True),  # operator | operator_viewer
    # Sealed (accounts/totp_secrets.py; plain base32 before migration 0033, sealed at the next start); set
    # while enabling, enabled by totp_enabled.
    Column("totp_secret", String(200), nullable=True),
    Column("totp_enabled", Boolean, nullable=False, default=False, server_default=false()),
    # The 30-second step of the last TOTP code accepted: a code is used once, even within its window.
    Column("totp_last_step", BigInteger, nullable=True),
    Column("recovery_codes", JSON, nullable=True),  # SHA-256 of each unused recovery code
    Column("created_at_ms", BigInteger, nullable=False),
    Column("last_sign_in_at_ms", BigInteger, nullable=True),
    # SCIM provisioning (migration 0030; accounts/scim/): how the user came to be (`scim`; NULL: an operator,
    # an invitation or the CLI), the identity provider's externalId, when SCIM last changed the user (its
    # `meta.lastModified`) and when SCIM deleted it (kept, disabled, for the audit trail; SCIM no longer
    # returns it). Server defaults only / nullable: an older revision's insert does not name them.
    Column("origin", String(16), nullable=True),
    Column("external_id", String(200), nullable=True),
    Column("modified_at_ms", BigInteger, nullable=True),
    Column("scim_deleted_at_ms", BigInteger, nullable=True),
    # What SCIM last sent (migration 0031): the lower-cased userName when it is not the email (filters,
    # uniqueness), and userName, name, displayName and emails as sent, so a GET returns them as written.
    Column("scim_user_name_key", String(256), nullable=True, index=True),
    Column("scim_attributes", JSON, nullable=True),
)

# A person's role in a team (accounts/members.py): owner | admin | developer | viewer.
memberships = Table(
    "memberships",
    metadata,
    Column("team_id", String(40), ForeignKey("teams.id"), primary_key=True),
    Column("user_id", String(40), ForeignKey("users.id"), primary_key=True, index=True),
    Column("role", String(16), nullable=False),
    Column("joined_at_ms", BigInteger, nullable=False),
)

# Invitations to a team (accounts/invitations.py): the link's token is stored as its SHA-256 only.
invitations = Table(
    "invitations",
    metadata,
    Column("id", String(40), primary_key=True),  # inv_...
    Column("team_id", String(40), ForeignKey("teams.id"), nullable=False, index=True),
    Column("email", String(320), nullable=False),
    Column("role", String(16), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_by", String(40), nullable=True),  # a user id; None: the admin token, the CLI or a key
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Column("accepted_at_ms", BigInteger, nullable=True),
    Column("accepted_by", String(40), nullable=True),
    Column("revoked_at_ms", BigInteger, nullable=True),
)

# Setup and password-reset links (accounts/links.py): single use, expiring, stored as SHA-256.
user_links = Table(
    "user_links",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_id", String(40), ForeignKey("users.id"), nullable=False, index=True),
    Column("kind", String(16), nullable=False),  # setup | reset
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Column("used_at_ms", BigInteger, nullable=True),
    Column("revoked_at_ms", BigInteger, nullable=True),
)


# SCIM groups (accounts/scim/groups.py): the identity provider's groups and their members. A group's
# `display_name` is the key into the role mappings (docs/deploy/sso.md).
scim_groups = Table(
    "scim_groups",
    metadata,
    Column("id", String(40), primary_key=True),  # grp_...
    Column("display_name", String(256), nullable=False),
    Column("display_key", String(256), nullable=False, unique=True),  # lower-cased: unique case-insensitively
    Column("external_id", String(200), nullable=True),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("modified_at_ms", BigInteger, nullable=False),
)

scim_group_members = Table(
    "scim_group_members",
    metadata,
    Column("group_id", String(40), ForeignKey("scim_groups.id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", String(40), ForeignKey("users.id"), primary_key=True, index=True),
)


# OpenID Connect identities (accounts/identities.py, migration 0031): a provider's (issuer, subject) signs in
# as exactly one user.
identities = Table(
    "identities",
    metadata,
    Column("id", String(40), primary_key=True),  # idn_...
    Column("issuer", String(500), nullable=False),
    Column("subject", String(255), nullable=False),
    Column("user_id", String(40), ForeignKey("users.id"), nullable=False, index=True),
    Column("created_at_ms", BigInteger, nullable=False),
    UniqueConstraint("issuer", "subject", name="uq_identities_issuer_subject"),
)

# What the role mappings gave (accounts/role_mappings.py, migration 0031): one row per membership (`scope` a
# team id) or operator role (`scope` "operator") that exists because of the person's groups, so a change of
# groups takes back exactly those and never a membership given by hand.
mapped_grants = Table(
    "mapped_grants",
    metadata,
    Column("user_id", String(40), ForeignKey("users.id"), primary_key=True),
    Column("scope", String(40), primary_key=True),
    Column("role", String(24), nullable=False),
    Column("granted_at_ms", BigInteger, nullable=False),
)
