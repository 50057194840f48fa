"""Who made a change, as the audit log records it: the actor of a request (kind, key, request id, client)."""

from __future__ import annotations

from starlette.requests import Request

from modelport.accounts.audit import Actor, ActorKind


def request_actor(request: Request, kind: ActorKind, *, key_id: str | None = None) -> Actor:
    request_id = request.scope.get("state", {}).get("request_id")
    client = request.client.host if request.client is not None else None
    return Actor(kind, key_id=key_id, request_id=request_id, client=client)
