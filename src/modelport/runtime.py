"""Everything a process shares between its requests: settings, database, caches, background hooks.

One `Runtime` per process, built by an app factory (never at import time) and opened in the app's
lifespan. Both hosts in one process may share a Runtime.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.auth import Authenticator
from modelport.catalog import CatalogStore
from modelport.ratelimit import make_limiters
from modelport.settings import Settings
from modelport.storage.db import create_engine

Hook = Callable[[], Awaitable[None]]
log = logging.getLogger("modelport.runtime")


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


class Runtime:
    def __init__(self, settings: Settings, *, engine: AsyncEngine | None = None) -> None:
        self.settings = settings
        self.db = engine or create_engine(settings.effective_database_url)
        self.secret_key = ensure_secret_key(settings)
        self.auth = Authenticator(self.db, ttl=settings.auth_cache_seconds)
        self.catalog = CatalogStore(self.db)
        # Shared between processes only through Redis; in-process limits hold for one process.
        self.limiters = make_limiters(settings.redis_url, settings.ratelimit_prefix)
        self._startup: list[Hook] = []
        self._shutdown: list[Hook] = []
        self._opened = 0

    def on_startup(self, hook: Hook) -> None:
        self._startup.append(hook)

    def on_shutdown(self, hook: Hook) -> None:
        self._shutdown.append(hook)

    async def open(self) -> None:
        """Idempotent per app: two hosts sharing a runtime open it once and close it once."""
        self._opened += 1
        if self._opened > 1:
            return
        for hook in self._startup:
            await hook()

    async def close(self) -> None:
        self._opened -= 1
        if self._opened > 0:
            return
        for hook in reversed(self._shutdown):
            try:
                await hook()
            except Exception:
                log.exception("shutdown hook failed")
        await self.auth.drain()
        await self.limiters.aclose()
        await self.db.dispose()
