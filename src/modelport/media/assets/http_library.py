"""The vendorA asset API adapter (`MODELPORT_ASSETS__BACKEND=http`).

The upstream API (documented in docs/api/assets.md, "vendorA upstream"), under `MODELPORT_ASSETS__BASE_URL`,
with `Authorization: Bearer <key>` (the key is read from the environment variable that
`MODELPORT_ASSETS__API_KEY_ENV` names):

- `POST   /v1/assets`        multipart: `file`, `type`, `name`?; header `Idempotency-Key: <our asset id>`
                             → 200/201 `{"id", "status", "reason"?}`; 400/413/415/422 = rejected
- `GET    /v1/assets/{id}`   → 200 `{"id", "status", "reason"?}`
- `DELETE /v1/assets/{id}`   → 200/204 (404 counts as deleted)

Its statuses map to ours: `Active` → active; `Pending`, `Queued`, `Processing` → processing;
`Failed`, `Rejected` → failed (case-insensitive). We send the bytes we fetched and probed, never the
user's URL: the upstream may not reach it (our own download URLs live on our network) and we have
already checked it.

Each call: connect timeout, a per-attempt timeout, up to `retries` more attempts with exponential backoff
on a connection error, a timeout or a 5xx (POSTs are safe to repeat thanks to the Idempotency-Key), and a
circuit breaker that refuses calls at once (503) after `breaker_failures` straight failed calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any, BinaryIO

import aiohttp
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.media.assets import repository as repo
from modelport.media.assets.breaker import CircuitBreaker
from modelport.media.assets.errors import AssetRejected, ProviderUnavailable
from modelport.media.assets.library import Added, NewAsset
from modelport.media.assets.repository import AssetRecord
from modelport.media.assets.states import AssetStatus
from modelport.settings import AssetsSettings

log = logging.getLogger("modelport.media.assets.vendora")

STATUS_MAP = {
    "active": AssetStatus.ACTIVE,
    "ready": AssetStatus.ACTIVE,
    "pending": AssetStatus.PROCESSING,
    "queued": AssetStatus.PROCESSING,
    "processing": AssetStatus.PROCESSING,
    "failed": AssetStatus.FAILED,
    "rejected": AssetStatus.FAILED,
}
_REJECTED = frozenset({400, 413, 415, 422})


class _Retryable(Exception):
    pass


class HttpLibrary:
    backend = "http"

    def __init__(
        self,
        settings: AssetsSettings,
        *,
        engine: AsyncEngine | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        if not settings.base_url:
            raise ValueError("MODELPORT_ASSETS__BASE_URL is required when MODELPORT_ASSETS__BACKEND=http")
        self._settings = settings
        self._base = settings.base_url.rstrip("/")
        self._breaker = CircuitBreaker(settings.breaker_failures, settings.breaker_open_seconds)
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None
        self._engine = engine
        self._poller: asyncio.Task[None] | None = None

    @property
    def breaker(self) -> CircuitBreaker:
        return self._breaker

    def ensure_available(self) -> None:
        if self._breaker.state == "open":
            raise ProviderUnavailable()

    async def start(self) -> None:
        if self._engine is not None and self._poller is None:
            self._poller = asyncio.create_task(self._poll_forever(self._engine))

    async def aclose(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- operations -------------------------------------------------------------------------------

    async def add(self, asset: NewAsset) -> Added:
        opened: list[BinaryIO] = []

        def form() -> aiohttp.FormData:
            data = aiohttp.FormData()
            data.add_field("type", asset.type)
            if asset.name is not None:
                data.add_field("name", asset.name)
            # A fresh file object per attempt: a retry re-sends the whole body.
            opened.append(asset.path.open("rb"))
            data.add_field("file", opened[-1], filename=asset.asset_id, content_type=asset.probed.mime_type)
            return data

        try:
            status, body = await self._call("POST", "/v1/assets", form=form, idempotency_key=asset.asset_id)
        finally:
            for fh in opened:
                fh.close()
        if status in _REJECTED:
            raise AssetRejected(_reason(body) or f"the provider refused the file (HTTP {status})")
        if status not in (200, 201) or not isinstance(body.get("id"), str):
            log.error("vendorA POST /v1/assets answered HTTP %s %r", status, body)
            raise ProviderUnavailable()
        mapped, reason = _map(body)
        return Added(status=mapped, reason=reason, upstream_id=body["id"])

    async def after_insert(self, asset: NewAsset, added: Added) -> None:
        return None

    async def discard(self, asset: NewAsset, added: Added) -> None:
        if added.upstream_id:
            await self._delete_upstream(added.upstream_id)

    async def refresh(self, record: AssetRecord) -> tuple[AssetStatus, str | None] | None:
        if record.upstream_id is None or self._breaker.state == "open":
            return None
        try:
            status, body = await self._call("GET", f"/v1/assets/{record.upstream_id}")
        except ProviderUnavailable:
            return None  # polling shows the last known state while the provider is away
        if status == 404:
            return AssetStatus.FAILED, "the provider no longer has this asset"
        if status != 200:
            return None
        return _map(body)

    async def remove(self, record: AssetRecord) -> None:
        if record.upstream_id is not None:
            await self._delete_upstream(record.upstream_id)

    async def _delete_upstream(self, upstream_id: str) -> None:
        status, _ = await self._call("DELETE", f"/v1/assets/{upstream_id}")
        if status not in (200, 202, 204, 404):
            log.error("vendorA DELETE /v1/assets/%s answered HTTP %s", upstream_id, status)
            raise ProviderUnavailable()

    # -- background polling -----------------------------------------------------------------------

    async def poll_once(self, engine: AsyncEngine) -> int:
        """Refresh every `processing` asset from vendorA; how many settled."""
        settled = 0
        for record in await repo.processing_assets(engine, self.backend, limit=200):
            fresh = await self.refresh(record)
            if fresh is not None and fresh[0] != AssetStatus.PROCESSING:
                status, reason = fresh
                settled += await repo.finish_processing(
                    engine, record.id, status=status, reason=reason, now_ms=now_ms()
                )
        return settled

    async def _poll_forever(self, engine: AsyncEngine) -> None:
        # So the list shows `active` without anyone polling one asset; GET one also refreshes on demand.
        while True:
            await asyncio.sleep(self._settings.poll_interval_seconds)
            try:
                await self.poll_once(engine)
            except Exception:
                log.exception("polling vendorA for processing assets failed")

    # -- transport --------------------------------------------------------------------------------

    async def _call(
        self,
        method: str,
        path: str,
        *,
        form: Callable[[], aiohttp.FormData] | None = None,
        idempotency_key: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) of a call that got an answer below 500; ProviderUnavailable otherwise."""
        if not self._breaker.allow():
            raise ProviderUnavailable()
        headers = {"Authorization": f"Bearer {self._api_key()}"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        attempts = self._settings.retries + 1
        for attempt in range(attempts):
            try:
                result = await self._attempt(method, path, headers, form() if form is not None else None)
            except _Retryable as exc:
                log.warning("vendorA %s %s attempt %d/%d failed: %s", method, path, attempt + 1, attempts, exc)
                if attempt + 1 < attempts:
                    await self._sleep(self._settings.retry_backoff_seconds * 2**attempt)
                continue
            if result[0] in (401, 403):
                # Our key is wrong: the provider is unusable for everyone until an operator fixes it.
                log.error("vendorA refused our API key (HTTP %s): check %s", result[0], self._settings.api_key_env)
                self._breaker.failure()
                raise ProviderUnavailable()
            self._breaker.success()
            return result
        self._breaker.failure()
        raise ProviderUnavailable()

    async def _attempt(
        self, method: str, path: str, headers: dict[str, str], data: aiohttp.FormData | None
    ) -> tuple[int, dict[str, Any]]:
        timeout = aiohttp.ClientTimeout(
            total=self._settings.request_timeout_seconds, sock_connect=self._settings.connect_timeout_seconds
        )
        try:
            async with self._session_().request(
                method, self._base + path, headers=headers, data=data, timeout=timeout
            ) as resp:
                if resp.status >= 500:
                    raise _Retryable(f"HTTP {resp.status}")
                try:
                    body = await resp.json(content_type=None)
                except ValueError:
                    body = None
                return resp.status, body if isinstance(body, dict) else {}
        except TimeoutError as exc:
            raise _Retryable("timed out") from exc
        except aiohttp.ClientError as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc

    def _session_(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(trust_env=False)
        return self._session

    def _api_key(self) -> str:
        return os.environ.get(self._settings.api_key_env, "")


def _map(body: dict[str, Any]) -> tuple[AssetStatus, str | None]:
    raw = str(body.get("status", "")).lower()
    status = STATUS_MAP.get(raw)
    if status is None:
        log.warning("vendorA sent an unknown asset status %r; treating it as processing", raw)
        status = AssetStatus.PROCESSING
    return status, (_reason(body) if status == AssetStatus.FAILED else None)


def _reason(body: dict[str, Any]) -> str | None:
    for key in ("reason", "message", "error"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value[:255]
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            return str(value["message"])[:255]
    return None
