"""The per-process container: every long-lived service of one process, with one lifecycle.

`Services` holds what every feature needs (settings, database, signing key, the one Redis client, the
limiters, the key cache, the catalog) as attributes, and each feature's own services under typed keys:

    SETTLEMENTS: ServiceKey[SettlementWriter] = ServiceKey("settlements")   # next to the class
    services.add(SETTLEMENTS, SettlementWriter(...))                          # apps/assemble.py, one line
    services[SETTLEMENTS]                                                      # anywhere, typed

The container is built in one place (`apps/assemble.build_services`); features never build their own.
`start()` starts the services in the order they were added; `aclose()` closes them in reverse, so a
service is closed before the services it was built from. Both hosts of a process share one container:
it starts with the first app and closes with the last.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.auth import Authenticator
from modelport.catalog import CatalogStore
from modelport.ratelimit import Limiters, make_limiters
from modelport.secret_box import Purpose, SecretBox, secret_box
from modelport.settings import Settings
from modelport.storage.db import create_engine

if TYPE_CHECKING:
    from redis.asyncio import Redis

T = TypeVar("T")
Hook = Callable[[], Awaitable[None]]
log = logging.getLogger("modelport.services")
REDIS_MAX_CONNECTIONS = 64


@runtime_checkable
class Startable(Protocol):
    async def start(self) -> None: ...


@runtime_checkable
class Closable(Protocol):
    async def aclose(self) -> None: ...


class ServiceKey(Generic[T]):
    """The typed name of one feature service in the container."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


def ensure_secret_key(settings: Settings) -> str:
    """The signing key: from settings, else a random one kept in the data dir (shared by local workers)."""
    if settings.secret_key is not None:
        return settings.secret_key.get_secret_value()
    path = settings.data_dir / "secret_key"
    if path.exists():
        return path.read_text("utf-8").strip()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(48)
    # O_EXCL: when several processes race here, exactly one writes and the others read its key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return Path(path).read_text("utf-8").strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(value)
    return value


def make_redis(url: str) -> Redis:
    """The process's one Redis client. Its pool blocks (up to 5 s) when every connection is busy instead of
    failing at once, so a burst queues for a connection. Nothing connects until first use. redis-py
    (~6 MiB, ~0.1 s) is imported only here: a process without MODELPORT_REDIS_URL never loads it."""
    from redis.asyncio import BlockingConnectionPool, Redis

    pool = BlockingConnectionPool.from_url(
        url, max_connections=REDIS_MAX_CONNECTIONS, timeout=5.0, socket_timeout=5.0, socket_connect_timeout=5.0
    )
    return Redis.from_pool(pool)  # the client owns the pool and closes it


class Services:
    def __init__(self, settings: Settings, *, engine: AsyncEngine | None = None) -> None:
        self.settings = settings
        self.db = engine or create_engine(settings.effective_database_url)
        self.secret_key = ensure_secret_key(settings)
        # Shared between processes only through Redis; in-process limits hold for one process.
        self.redis: Redis | None = make_redis(settings.redis_url) if settings.redis_url else None
        self.limiters: Limiters = make_limiters(self.redis, settings.redis_prefix)
        self.auth = Authenticator(self.db, ttl=settings.auth_cache_seconds)
        self.catalog = CatalogStore(self.db)
        self._services: dict[ServiceKey[Any], object] = {}
        self._starts: list[Hook] = []
        self._closes: list[Hook] = []
        self._users = 0
        # Set by `serve` on SIGTERM: /readyz answers 503 from then on (apps/health.py).
        self.draining = False

    def secret_box(self, purpose: Purpose) -> SecretBox:
        """The box that seals `purpose`'s secrets at rest under this process's secret key (and opens those
        sealed under the previous one)."""
        previous = self.settings.previous_secret_key
        return secret_box(self.secret_key, previous.get_secret_value() if previous else None, purpose)

    def add(self, key: ServiceKey[T], service: T) -> T:
        """Register `service` under `key`; its `start()`/`aclose()`, when it has them, join the lifecycle."""
        if key in self._services:
            raise ValueError(f"{key!r} is registered already")
        self._services[key] = service
        if isinstance(service, Startable):
            self._starts.append(service.start)
        if isinstance(service, Closable):
            self._closes.append(service.aclose)
        return service

    def __getitem__(self, key: ServiceKey[T]) -> T:
        try:
            service = cast(T, self._services[key])
        except KeyError:
            raise LookupError(f"{key!r} is not in this process's services (see apps/assemble.py)") from None
        return service

    async def start(self) -> None:
        """Idempotent per user: two apps sharing the container start it once and close it once."""
        self._users += 1
        if self._users > 1:
            return
        for start in self._starts:
            await start()

    async def aclose(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        for close in reversed(self._closes):
            try:
                await close()
            except Exception:
                log.exception("closing a service failed")
        await self.auth.aclose()
        await self.limiters.aclose()
        if self.redis is not None:
            await self.redis.aclose()
        await self.db.dispose()
