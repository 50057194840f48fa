"""Stored Responses, per team.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table, Text

from modelport.storage.schema import metadata

# A response kept for `previous_response_id` (migration 0024): the response object as the client got it
# and the input items its request sent (not the chained ones), as JSON text. The id is the one the client
# saw (the gateway's own, or a same-protocol upstream's), unique within a team.
stored_responses = Table(
    "stored_responses",
    metadata,
    Column("team_id", String(64), primary_key=True),
    Column("id", String(200), primary_key=True),
    Column("previous_id", String(200), nullable=True),
    Column("input_items", Text, nullable=False),
    Column("response", Text, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Index("ix_stored_responses_expires_at_ms", "expires_at_ms"),
)

# A conversation (migration 0027): its metadata as JSON text, and the position its next item takes. It
# lives for the store lifetime from its last use: `expires_at_ms` moves on with every response and item
# added to it.
conversations = Table(
    "conversations",
    metadata,
    Column("team_id", String(64), primary_key=True),
    Column("id", String(200), primary_key=True),
    Column("metadata", Text, nullable=False),
    Column("next_position", BigInteger, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Index("ix_conversations_expires_at_ms", "expires_at_ms"),
)

# A conversation's items in the order they were added (`position`), each as JSON text with its `id`.
conversation_items = Table(
    "conversation_items",
    metadata,
    Column("team_id", String(64), primary_key=True),
    Column("conversation_id", String(200), primary_key=True),
    Column("position", BigInteger, primary_key=True),
    Column("id", String(200), nullable=False),
    Column("item", Text, nullable=False),
    Index("ix_conversation_items_item_id", "team_id", "conversation_id", "id"),
)

# A background response (`background: true`, migration 0032): the request as the client sent it (JSON text)
# and the headers the gateway reads, the key that made it, its status (queued, in_progress, completed,
# failed, cancelled, incomplete) and its latest response object (JSON text). `attempt` counts the runs
# started; a running one holds the row until `lease_until_ms` (renewed while it runs): past it the
# reconciler queues it again. `request_id` is the same for every attempt, so the request is billed once.
background_responses = Table(
    "background_responses",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("team_id", String(64), nullable=False),
    Column("key_id", String(64), nullable=False),
    Column("request_id", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("body", Text, nullable=False),
    Column("headers", Text, nullable=False),
    Column("response", Text, nullable=False),
    Column("attempt", BigInteger, nullable=False),
    Column("lease_until_ms", BigInteger, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Index("ix_background_responses_status", "status", "lease_until_ms"),
    Index("ix_background_responses_expires_at_ms", "expires_at_ms"),
)

# A background response's stream events in order (`sequence_number` as the client sees it), each the SSE
# event's data (JSON text); replayed by `GET /v1/responses/{id}?stream=true&starting_after=N`.
background_response_events = Table(
    "background_response_events",
    metadata,
    Column("response_id", String(200), primary_key=True),
    Column("sequence_number", BigInteger, primary_key=True),
    Column("event", String(64), nullable=False),
    Column("data", Text, nullable=False),
)
