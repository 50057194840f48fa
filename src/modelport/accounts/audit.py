"""The audit log: one append-only `audit_events` row per change an operator or a team admin makes.

A change records its event with `record(conn, actor, ...)` on the connection of the transaction that makes
the change, so the two commit or roll back together (no change without its event, no event without its
change). `Actor` says who: the operator through the admin API (`operator_token`), the operator console
(`operator_console`), the admin CLI (`operator_cli`), a team's admin key on the keys API (`team_key`) or a
team console session (`team_console`, with the key it signed in with) or a person (`user`, with
the user's id and email) or the identity provider's SCIM client (`scim`). `before`/`after` are the fields the
change touched; anything that looks like a credential is masked before it is stored (`mask`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

import orjson
from sqlalchemy import Select, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts.tables import audit_events
from modelport.clock import now_ms
from modelport.core.redaction import is_credential_header

ActorKind = Literal["operator_token", "operator_console", "operator_cli", "team_key", "team_console", "user", "scim"]
ACTOR_KINDS: tuple[ActorKind, ...] = (
    "operator_token",
    "operator_console",
    "operator_cli",
    "team_key",
    "team_console",
    "user",
    "scim",
)
MASK_KEEP = 4  # characters of a credential kept at its end, so two values can still be told apart


@dataclass(frozen=True, slots=True)
class Actor:
    kind: ActorKind
    key_id: str | None = None  # the team key that acted (team_key, team_console)
    request_id: str | None = None
    client: str | None = None  # the client's address, as the server saw it
    user_id: str | None = None  # the person who acted (kind `user`)
    email: str | None = None


def mask_value(value: str) -> str:
    return "••••" + value[-MASK_KEEP:] if len(value) > 2 * MASK_KEEP else "••••"


def mask(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A copy of `values` with every credential-named string masked (in nested mappings and lists too)."""
    if values is None:
        return None
    return {name: _masked(name, value) for name, value in values.items()}


def _masked(name: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        return mask(value)
    if isinstance(value, list | tuple):  # e.g. a catalog entry's deployments, each with its headers
        return [_masked(name, item) for item in value]
    if isinstance(value, str) and is_credential_header(name):  # secret, token, authorization, api key...
        return mask_value(value)
    return value


def _json(values: Mapping[str, Any] | None) -> str | None:
    masked = mask(values)
    if masked is None:
        return None
    return orjson.dumps(masked, default=_plain).decode()


def _plain(value: object) -> str:
    """Amounts as exact decimal strings ("12.5"); anything else JSON lacks as its repr."""
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return repr(value)


async def record(
    conn: AsyncConnection,
    actor: Actor | None,
    action: str,
    *,
    team_id: str | None,
    target: str,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> None:
    """Add the event inside the caller's transaction. No actor: a change made by start-up itself (the demo
    team), not by anyone; it is not recorded."""
    if actor is None:
        return
    await conn.execute(
        insert(audit_events).values(
            at_ms=now_ms(),
            team_id=team_id,
            actor_kind=actor.kind,
            actor_key_id=actor.key_id,
            actor_user_id=actor.user_id,
            actor_email=actor.email,
            action=action,
            target=target[:120],  # the column's size; ids and slugs are shorter
            before=_json(before),
            after=_json(after),
            request_id=actor.request_id,
            client=actor.client,
        )
    )


@dataclass(frozen=True, slots=True)
class AuditFilter:
    team_id: str | None = None
    actor_kind: str | None = None
    action: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None  # exclusive
    before_id: int | None = None  # keyset paging: events older than this id


def _query(f: AuditFilter) -> Select[Any]:
    stmt = select(audit_events)
    c = audit_events.c
    if f.team_id is not None:
        stmt = stmt.where(c.team_id == f.team_id)
    if f.actor_kind is not None:
        stmt = stmt.where(c.actor_kind == f.actor_kind)
    if f.action is not None:
        stmt = stmt.where(c.action == f.action)
    if f.since_ms is not None:
        stmt = stmt.where(c.at_ms >= f.since_ms)
    if f.until_ms is not None:
        stmt = stmt.where(c.at_ms < f.until_ms)
    if f.before_id is not None:
        stmt = stmt.where(c.id < f.before_id)
    return stmt.order_by(c.id.desc())


async def list_events(engine: AsyncEngine, f: AuditFilter, *, limit: int) -> list[dict[str, Any]]:
    """Newest first; the public shape of each event (docs/api/audit.md)."""
    async with engine.connect() as conn:
        rows = (await conn.execute(_query(f).limit(limit))).all()
    return [event_view(r._mapping) for r in rows]


def event_view(m: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": int(m["id"]),
        "at_ms": int(m["at_ms"]),
        "team_id": m["team_id"],
        "actor": {
            "kind": m["actor_kind"],
            "key_id": m["actor_key_id"],
            "user_id": m["actor_user_id"],
            "email": m["actor_email"],
        },
        "action": m["action"],
        "target": m["target"],
        "before": None if m["before"] is None else orjson.loads(m["before"]),
        "after": None if m["after"] is None else orjson.loads(m["after"]),
        "request_id": m["request_id"],
        "client": m["client"],
    }


async def prune_audit(engine: AsyncEngine, older_than_ms: int) -> int:
    """Delete events recorded before `older_than_ms` (the retention pruner's call); how many went."""
    async with engine.begin() as conn:
        result = await conn.execute(delete(audit_events).where(audit_events.c.at_ms < older_than_ms))
    return int(result.rowcount or 0)
