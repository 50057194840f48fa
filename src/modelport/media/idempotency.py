"""`Idempotency-Key` on the media host's creations (tasks, asset registrations, file uploads).

The same team, key and request (method, path, body hash and, for tasks, the task headers) within
`tasks.idempotency_key_seconds` (24 h) gets the first answer again with `Idempotent-Replayed: true`; the same
key with another request is a 409. The row's primary key `(team_id, key)` decides between concurrent
duplicates on any process: one inserts it (`pending`) and does the work, the others wait until it is `done`
and answer what it answered. An error is not remembered: the key is freed, so a retry does the work. A
request that died while `pending` leaves the key to its lease; the next duplicate then takes it over.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from starlette.responses import Response

from modelport.clock import now_ms
from modelport.errors import Conflict, InvalidParameters
from modelport.media.tables import idempotency_keys
from modelport.services import ServiceKey
from modelport.web.envelope import encode_json, ok

IDEMPOTENCY_KEYS: ServiceKey[IdempotencyKeys] = ServiceKey("idempotency keys")
HEADER = "idempotency-key"
MAX_KEY = 255
# How long a pending key belongs to the request that took it before a duplicate may take it over, and how
# long a duplicate waits for the first request's answer before it is told to retry.
PENDING_LEASE_SECONDS = 120.0
WAIT_FOR_FIRST_SECONDS = 30.0
_POLL_SECONDS = 0.05


def key_of(raw: str | None) -> str | None:
    """The header's key, or None without one; 400 unless 1-255 printable ASCII characters."""
    if raw is None:
        return None
    if not 1 <= len(raw) <= MAX_KEY or not all(0x20 <= ord(c) <= 0x7E for c in raw):
        raise InvalidParameters(
            f"Idempotency-Key must be 1 to {MAX_KEY} printable ASCII characters", param="Idempotency-Key"
        )
    return raw


def fingerprint(method: str, path: str, body_sha256: str, *extra: str) -> str:
    """What makes two requests "the same": method, path, the body's hash and what else the caller names."""
    parts = [method.upper(), path, body_sha256, *extra]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Claim:
    """This request holds the key: do the work, then `complete` (or `release` on an error)."""

    team_id: str
    key: str
    owner: str


@dataclass(frozen=True, slots=True)
class Replay:
    """The first request's answer (`data` as encoded JSON)."""

    data: bytes

    def response(self) -> Response:
        body = b'{"code":0,"message":"success","data":' + self.data + b"}"
        return Response(body, media_type="application/json", headers={"Idempotent-Replayed": "true"})


class IdempotencyKeys:
    def __init__(self, engine: AsyncEngine, *, ttl_seconds: int) -> None:
        self.engine = engine
        self.ttl_ms = ttl_seconds * 1000

    async def claim(self, team_id: str, key: str, print_: str) -> Claim | Replay:
        owner = secrets.token_hex(16)
        give_up = time.monotonic() + WAIT_FOR_FIRST_SECONDS
        while True:
            now = now_ms()
            try:
                async with self.engine.begin() as conn:
                    await conn.execute(
                        insert(idempotency_keys).values(
                            team_id=team_id,
                            key=key,
                            fingerprint=print_,
                            owner=owner,
                            state="pending",
                            created_at_ms=now,
                            lease_until_ms=now + int(PENDING_LEASE_SECONDS * 1000),
                            expires_at_ms=now + self.ttl_ms,
                        )
                    )
                return Claim(team_id, key, owner)
            except IntegrityError:
                pass
            async with self.engine.connect() as conn:
                row = (await conn.execute(_select(team_id, key))).first()
            if row is None:
                continue  # freed meanwhile (an error, or pruned): try again
            if row.expires_at_ms <= now:
                await self._drop_expired(team_id, key, now)
                continue
            if row.fingerprint != print_:
                raise Conflict("Idempotency-Key was already used for a different request")
            if row.state == "done":
                return Replay(str(row.response).encode())
            if row.lease_until_ms < now and await self._take_over(row.team_id, key, row.owner, owner, now):
                return Claim(team_id, key, owner)
            if time.monotonic() > give_up:
                raise Conflict("a request with this Idempotency-Key is still being processed; retry it later")
            await asyncio.sleep(_POLL_SECONDS)

    async def complete_in(self, conn: AsyncConnection, claim: Claim, data: object) -> bool:
        """Record the answer in the caller's transaction; False if the claim was lost (taken over)."""
        result = await conn.execute(
            update(idempotency_keys)
            .where(
                idempotency_keys.c.team_id == claim.team_id,
                idempotency_keys.c.key == claim.key,
                idempotency_keys.c.owner == claim.owner,
            )
            .values(state="done", response=encode_json(data).decode())
        )
        return bool(result.rowcount)

    async def complete(self, claim: Claim, data: object) -> None:
        async with self.engine.begin() as conn:
            await self.complete_in(conn, claim, data)

    async def release(self, claim: Claim) -> None:
        """The request failed: forget the key, so that a retry does the work."""
        async with self.engine.begin() as conn:
            await conn.execute(
                delete(idempotency_keys).where(
                    idempotency_keys.c.team_id == claim.team_id,
                    idempotency_keys.c.key == claim.key,
                    idempotency_keys.c.owner == claim.owner,
                    idempotency_keys.c.state == "pending",
                )
            )

    async def _drop_expired(self, team_id: str, key: str, now: int) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                delete(idempotency_keys).where(
                    idempotency_keys.c.team_id == team_id,
                    idempotency_keys.c.key == key,
                    idempotency_keys.c.expires_at_ms <= now,
                )
            )

    async def _take_over(self, team_id: str, key: str, old: str, new: str, now: int) -> bool:
        async with self.engine.begin() as conn:
            result = await conn.execute(
                update(idempotency_keys)
                .where(
                    idempotency_keys.c.team_id == team_id,
                    idempotency_keys.c.key == key,
                    idempotency_keys.c.owner == old,
                    idempotency_keys.c.state == "pending",
                )
                .values(owner=new, lease_until_ms=now + int(PENDING_LEASE_SECONDS * 1000))
            )
        return bool(result.rowcount)


def _select(team_id: str, key: str) -> Select[Any]:
    return select(idempotency_keys).where(idempotency_keys.c.team_id == team_id, idempotency_keys.c.key == key)


async def once(
    keys: IdempotencyKeys, team_id: str, key: str, print_: str, work: Callable[[], Awaitable[Any]]
) -> Response:
    """Do `work` once per key (its `data` in the envelope), or answer the first request's `data` again."""
    got = await keys.claim(team_id, key, print_)
    if isinstance(got, Replay):
        return got.response()
    try:
        data = await work()
    except BaseException:
        await asyncio.shield(keys.release(got))
        raise
    await keys.complete(got, data)
    return ok(data)


async def prune_expired(engine: AsyncEngine, *, now: int | None = None) -> int:
    """Delete the keys that expired (the retention pruner calls this); how many went."""
    cutoff = now_ms() if now is None else now
    async with engine.begin() as conn:
        result = await conn.execute(delete(idempotency_keys).where(idempotency_keys.c.expires_at_ms <= cutoff))
    return int(result.rowcount or 0)
