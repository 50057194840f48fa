"""The response cache of teams that turn it on: a request's plan (its key and controls), the lookup, the
store of a complete answer (in the background, off the client's wait), a team's purge, what a hit costs.

Nothing here runs for a team whose cache is off: the gateway asks only when `AuthContext.cache` is on.
A store that fails (Redis down) never fails a request: the lookup is a miss, the answer is not kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from modelport.clock import now_ms as wall_ms
from modelport.core.codec import ProtocolCodec
from modelport.core.messages import CanonicalRequest
from modelport.core.response import StopReason
from modelport.metrics import CACHE_BYTES, CACHE_EVICTIONS, CACHE_LOOKUPS
from modelport.response_cache.controls import CacheMode, Use, read_controls
from modelport.response_cache.entry import Entry
from modelport.response_cache.key import request_digest
from modelport.response_cache.store import CacheStore
from modelport.services import ServiceKey
from modelport.settings import CacheSettings

log = logging.getLogger("modelport.response_cache")
RESPONSE_CACHE: ServiceKey[ResponseCache] = ServiceKey("response cache")
# A lookup waits at most this long for this process's own store of the same answer, still under way.
PENDING_WAIT_SECONDS = 2.0


class Result:
    """The `X-Modelport-Cache` answer and the log row's `cache`."""

    HIT = "hit"
    MISS = "miss"
    SKIP = "skip"


@dataclass(slots=True)
class Plan:
    """One request's use of its team's cache, decided before any upstream call."""

    team_id: str
    digest: str
    use: Use
    ttl_seconds: int
    tool_calls: bool  # answers that call tools may be stored
    result: str = Result.MISS
    saved_micros: int = 0  # a hit: the original cost less what the hit is billed

    @property
    def reads(self) -> bool:
        return self.use == Use.USE

    @property
    def writes(self) -> bool:
        return self.use != Use.SKIP


class ResponseCache:
    def __init__(self, store: CacheStore, settings: CacheSettings, clock: Callable[[], int] = wall_ms) -> None:
        self.store = store
        self._settings = settings
        self._clock = clock
        self._pending: dict[tuple[str, str], asyncio.Task[None]] = {}

    def plan(
        self,
        team_id: str,
        key_id: str,
        mode: str,
        tool_calls: bool,
        raw_headers: Iterable[tuple[bytes, bytes]],
        codec: ProtocolCodec,
        request: CanonicalRequest,
    ) -> Plan:
        """The request's plan (400 for a control header with a bad value)."""
        controls = read_controls(raw_headers, self._settings.ttl_seconds, self._settings.max_ttl_seconds)
        digest = request_digest(
            request, codec.name, key_id=key_id if mode == CacheMode.KEY else None, neutral=codec.cache_neutral
        )
        result = Result.SKIP if controls.use == Use.SKIP else Result.MISS
        return Plan(team_id, digest, controls.use, controls.ttl_seconds, tool_calls, result)

    async def lookup(self, plan: Plan) -> Entry | None:
        """The stored answer of a plan that reads, unless there is none (then a miss)."""
        if not plan.reads:
            _count(plan)
            return None
        pending = self._pending.get((plan.team_id, plan.digest))
        if pending is not None:
            await asyncio.wait({pending}, timeout=PENDING_WAIT_SECONDS)
        now = self._clock()
        try:
            raw = await self.store.get(plan.team_id, plan.digest, now)
        except Exception as exc:
            log.warning("response cache lookup failed: %s", exc)
            raw = None
        entry = None if raw is None else Entry.loads(raw)
        if entry is not None and entry.expires_at_ms > now:
            plan.result = Result.HIT
        _count(plan)
        return entry if plan.result == Result.HIT else None

    def hit_cost(self, entry: Entry) -> int:
        """What a hit of `entry` is billed, in micro-USD: the share of the original cost (exact, rounded)."""
        share = self._settings.hit_price_share
        if not share or entry.cost_micros <= 0:
            return 0
        return int((Decimal(entry.cost_micros) * share).quantize(Decimal(1), rounding=ROUND_HALF_UP))

    def keep(self, plan: Plan, codec: ProtocolCodec, body: dict[str, Any], cost_micros: int) -> None:
        """Store a complete successful answer (a body of the client's protocol) in the background, unless
        the plan does not write or the answer calls tools and the team keeps those out."""
        if not plan.writes or plan.result == Result.HIT:
            return
        response = codec.decode_response(body)
        if response.stop_reason == StopReason.ERROR or (response.tool_calls and not plan.tool_calls):
            return
        now = self._clock()
        entry = Entry(body, cost_micros, now, now + plan.ttl_seconds * 1000)
        slot = (plan.team_id, plan.digest)
        task = asyncio.get_running_loop().create_task(self._put(plan.team_id, plan.digest, entry))
        self._pending[slot] = task
        task.add_done_callback(lambda done: self._stored(slot, done))

    async def _put(self, team_id: str, digest: str, entry: Entry) -> None:
        try:
            stored = await self.store.put(team_id, digest, entry.dumps(), entry.expires_at_ms, entry.stored_at_ms)
        except Exception as exc:
            log.warning("response cache store failed: %s", exc)
            return
        for owner in stored.evicted:
            CACHE_EVICTIONS.labels(owner).inc()
        CACHE_BYTES.labels(team_id).set(stored.team_bytes)

    def _stored(self, slot: tuple[str, str], done: asyncio.Task[None]) -> None:
        if self._pending.get(slot) is done:
            del self._pending[slot]

    async def purge(self, team_id: str) -> int:
        """Remove every stored answer of the team (its cache turned off, or a team admin's purge)."""
        gone = await self.store.purge(team_id)
        CACHE_BYTES.labels(team_id).set(0)
        return gone

    async def aclose(self) -> None:
        if self._pending:
            await asyncio.gather(*self._pending.values(), return_exceptions=True)
        await self.store.aclose()


def _count(plan: Plan) -> None:
    CACHE_LOOKUPS.labels(plan.team_id, plan.result).inc()
