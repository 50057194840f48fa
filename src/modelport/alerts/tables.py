"""Operator alerts' last reported states.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, String, Table

from modelport.storage.schema import metadata

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
