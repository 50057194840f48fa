"""Resolving an API key to its team, with a short per-process cache.

The cache keeps the hot path free of a database read per request. Revocation, suspension and team changes
reach a process within `ttl` seconds (the admin API in the same process evicts at once). `last_used_at` is written
at most once a minute per key, in the background.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.keys import hash_key
from modelport.accounts.limits import KeyLimits
from modelport.accounts.models import ApiKey, Team
from modelport.accounts.permissions import KEY_ROLE_AS_TEAM_ROLE
from modelport.accounts.service import lookup_key, lookup_key_id, touch_key
from modelport.clock import now_ms

_TOUCH_INTERVAL_MS = 60_000
_MAX_ENTRIES = 100_000


@dataclass(frozen=True, slots=True)
class AuthContext:
    key_id: str
    key_prefix: str
    team_id: str
    team_name: str
    tier: str
    log_retention: bool = False
    # The key's own limits; None when it has none (the hot path then checks nothing more).
    limits: KeyLimits | None = None
    role: str = "member"
    key_name: str | None = None
    # The team's response cache: off | team | key, and whether answers with tool calls are stored.
    cache: str = "off"
    cache_tool_calls: bool = False
    # A person's console session (key_id is then ""): who, and their role in the team.
    user_id: str | None = None
    user_email: str | None = None
    member_role: str | None = None
    # A personal key's owner (None: a team key).
    owner_user_id: str | None = None

    @property
    def team_role(self) -> str:
        """The role this caller acts with in the team (`accounts.permissions`): a person's membership role,
        or the one a key's role stands for."""
        if self.member_role is not None:
            return self.member_role
        return KEY_ROLE_AS_TEAM_ROLE.get(self.role, "viewer")

    def refusal(self, at_ms: int, client_host: str | None) -> str | None:
        """Why this request may not use the key (`key_expired`, `ip_not_allowed`), None when it may."""
        limits = self.limits
        if limits is None:
            return None
        if limits.expired(at_ms):
            return "key_expired"
        if not limits.ip_allowed(client_host):
            return "ip_not_allowed"
        return None

    def may_use(self, model_id: str) -> bool:
        return self.limits is None or self.limits.may_use(model_id)


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a key resolved to: its context, or None and why (`suspended`: a valid key of a suspended team)."""

    context: AuthContext | None
    suspended: bool = False


_REFUSED = Resolution(None)


@dataclass(slots=True)
class _Entry:
    resolution: Resolution  # context None: unknown or revoked key, or a suspended team's (negative cache)
    expires_at: float
    touched_ms: int = 0


def _resolution(found: tuple[ApiKey, Team] | None) -> Resolution:
    if found is None or not found[0].active:
        return _REFUSED
    record, team = found
    if team.suspended:
        return Resolution(None, suspended=True)
    limits = None if record.limits.empty else record.limits
    return Resolution(
        AuthContext(
            record.id,
            record.prefix,
            team.id,
            team.name,
            team.tier,
            team.log_retention,
            limits=limits,
            role=record.role,
            key_name=record.name,
            cache=team.cache,
            cache_tool_calls=team.cache_tool_calls,
            owner_user_id=record.owner_user_id,
        )
    )


class Authenticator:
    def __init__(self, engine: AsyncEngine, *, ttl: float) -> None:
        self._engine = engine
        self._ttl = ttl
        self._cache: dict[str, _Entry] = {}
        # Key id -> team, for the console: its session remembers the key id, never the key. Same bound.
        self._by_id: dict[str, _Entry] = {}
        # Loads in flight per key digest: when an entry expires under load, the concurrent requests for that
        # key share one database lookup instead of each running its own (and filling the connection pool).
        self._loading: dict[str, asyncio.Future[_Entry]] = {}
        self._background: set[asyncio.Task[None]] = set()

    async def authenticate(self, key: str) -> AuthContext | None:
        """The key's context; None for a missing, unknown or revoked key and for a suspended team's key."""
        return (await self.resolve(key)).context

    async def resolve(self, key: str) -> Resolution:
        if not key:
            return _REFUSED
        digest = hash_key(key)
        now = time.monotonic()
        entry = self._cache.get(digest)
        if entry is None or entry.expires_at <= now:
            entry = await self._load_shared(digest, key, now) if self._ttl > 0 else await self._load(key, now)
            if self._ttl > 0:
                if len(self._cache) >= _MAX_ENTRIES:
                    self._cache.clear()
                self._cache[digest] = entry
        if entry.resolution.context is not None:
            self._maybe_touch(entry.resolution.context, entry)
        return entry.resolution

    async def authenticate_key_id(self, key_id: str) -> AuthContext | None:
        """The team of an active key, by key id; cached like `authenticate`, so a revocation reaches a
        console session within `ttl` seconds. Does not count as a use of the key (no `last_used_at`)."""
        now = time.monotonic()
        entry = self._by_id.get(key_id)
        if entry is None or entry.expires_at <= now:
            found = await lookup_key_id(self._engine, key_id)
            entry = _Entry(_resolution(found), expires_at=now + self._ttl)
            if self._ttl > 0:
                if len(self._by_id) >= _MAX_ENTRIES:
                    self._by_id.clear()
                self._by_id[key_id] = entry
        context = entry.resolution.context
        if context is not None and context.limits is not None and context.limits.expired(now_ms()):
            return None  # an expired key ends its console session like a revoked one
        return context

    def evict_all(self) -> None:
        self._cache.clear()
        self._by_id.clear()
        self._loading.clear()  # requests from now on must not join a lookup that started before the change

    async def _load_shared(self, digest: str, key: str, now: float) -> _Entry:
        pending = self._loading.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self._load(key, now))
            self._loading[digest] = pending
            pending.add_done_callback(lambda done: self._loaded(digest, done))
        # shield: one waiter giving up (client gone) must not cancel the lookup the others wait for.
        return await asyncio.shield(pending)

    def _loaded(self, digest: str, done: asyncio.Future[_Entry]) -> None:
        if self._loading.get(digest) is done:
            del self._loading[digest]
        if not done.cancelled():
            done.exception()  # retrieved: no "never retrieved" warning if every waiter has gone

    async def _load(self, key: str, now: float) -> _Entry:
        found = await lookup_key(self._engine, key)
        resolution = _resolution(found)
        touched = (found[0].last_used_at_ms or 0) if resolution.context is not None and found is not None else 0
        return _Entry(resolution, expires_at=now + self._ttl, touched_ms=touched)

    def _maybe_touch(self, context: AuthContext, entry: _Entry) -> None:
        at = now_ms()
        if at - entry.touched_ms < _TOUCH_INTERVAL_MS:
            return
        entry.touched_ms = at
        task = asyncio.create_task(touch_key(self._engine, context.key_id, at))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
