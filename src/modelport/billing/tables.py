"""Money: the ledger and its daily totals, credit reservations, settlement keys, key spend, and the marks
that send each key notification once.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    false,
)

from modelport.storage.schema import metadata

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


# One row per settlement applied to the ledger, written in the same transaction: a settlement retried after
# an ambiguous failure or replayed from a spill file is applied once.
# Rows past their retention are pruned at start-up.
settlement_keys = Table(
    "settlement_keys",
    metadata,
    Column("key", String(40), primary_key=True),
    Column("created_at_ms", BigInteger, nullable=False, index=True),
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
