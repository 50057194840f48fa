"""Provider asset operations: register (validate, fetch, probe, hand to the library), get, list, delete.

Registration checks, in this order (first failure answers):
1. `provider` is `vendorA` (400 `Invalid parameters: ...` naming it);
2. the body is a JSON object (400 `Invalid parameters: ...`);
3. `url` present (400 `Missing required parameter: url is required`), a string, an https URL without
   userinfo (400 `Invalid format: url must be an https URL without userinfo`; plain http is accepted only
   for our own download URLs and allow-listed hosts), at most 2048 characters;
4. `type` exactly `image`, `video` or `audio` (400 `Invalid parameters: type must be image, video, or audio`);
5. `name` a string of at most 64 characters (blank = omitted);
6. the URL's host is not a forbidden address (400, no connection made);
7. the team's `asset_service` flag (503), the provider reachable (503);
8. fetch (400 saying why it failed) and probe (400 `asset was rejected by the provider` + `reason`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.errors import InvalidParameters, MissingParameter, NotFound
from modelport.ids import new_id
from modelport.media.assets import repository as repo
from modelport.media.assets.errors import AssetRejected, AssetServiceOff
from modelport.media.assets.library import AssetLibrary, NewAsset
from modelport.media.assets.probe import MAX_BYTES, MediaKind, Rejected, probe
from modelport.media.assets.repository import AssetRecord
from modelport.media.assets.states import AssetStatus
from modelport.net import FetchError, SafeFetcher, UrlFormatRefused, UrlRefused
from modelport.services import ServiceKey
from modelport.settings import AssetsSettings

PROVIDERS = ("vendorA",)
TYPES: tuple[MediaKind, ...] = ("image", "video", "audio")
STATUSES = tuple(AssetStatus)
MAX_URL_CHARS = 2048
MAX_NAME_CHARS = 64
ASSETS: ServiceKey[AssetService] = ServiceKey("assets")
_ASSET_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_LIMIT_TEXT = {"image": "30 MB", "video": "200 MB", "audio": "15 MB"}


@dataclasses.dataclass(frozen=True, slots=True)
class Registration:
    url: str
    type: MediaKind
    name: str | None
    own: bool  # one of our download URLs: read from storage, no network


def check_provider(provider: str) -> None:
    if provider not in PROVIDERS:
        raise InvalidParameters(f"provider {provider!r} is not supported (supported: vendorA)", param="provider")


def parse_registration(body: bytes, fetcher: SafeFetcher) -> Registration:
    """The body checks of the registration, in the spec's order; raises the first failure."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise InvalidParameters("the body must be a JSON object") from None
    if not isinstance(data, dict):
        raise InvalidParameters("the body must be a JSON object")
    url = data.get("url")
    if url is None or url == "":
        raise MissingParameter("url is required", param="url")
    if not isinstance(url, str):
        raise InvalidParameters("url must be a string", param="url")
    own = fetcher.is_own(url)
    deferred: UrlRefused | None = None
    if not own:
        try:
            fetcher.check(url)
        except UrlFormatRefused:
            raise
        except UrlRefused as exc:
            deferred = exc  # an address refusal answers after the field checks
    if len(url) > MAX_URL_CHARS:
        raise InvalidParameters(f"url must be at most {MAX_URL_CHARS} characters", param="url")
    kind = data.get("type")
    if kind not in TYPES:
        raise InvalidParameters("type must be image, video, or audio", param="type")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidParameters("name must be a string", param="name")
    if name is not None and not name.strip():
        name = None
    if name is not None and len(name) > MAX_NAME_CHARS:
        raise InvalidParameters(f"name must be at most {MAX_NAME_CHARS} characters", param="name")
    if name is not None and any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidParameters("name must not contain control characters", param="name")
    if deferred is not None:
        raise deferred
    return Registration(url=url, type=kind, name=name, own=own)


class AssetService:
    def __init__(
        self, *, engine: AsyncEngine, fetcher: SafeFetcher, library: AssetLibrary, settings: AssetsSettings
    ) -> None:
        self.engine = engine
        self.fetcher = fetcher
        self.library = library
        self.settings = settings

    async def register(self, team_id: str, provider: str, body: bytes) -> dict[str, Any]:
        check_provider(provider)
        reg = parse_registration(body, self.fetcher)
        if not await repo.asset_service_enabled(self.engine, team_id):
            raise AssetServiceOff()
        self.library.ensure_available()
        try:
            fetched = await self.fetcher.fetch_to_file(
                reg.url, max_bytes=MAX_BYTES[reg.type], time_limit=self.settings.fetch_time_limit_seconds
            )
        except FetchError as exc:
            if exc.kind == "too_large":
                raise AssetRejected(f"the file is larger than the {reg.type} limit of {_LIMIT_TEXT[reg.type]}") from exc
            raise
        with fetched:
            try:
                async with asyncio.timeout(self.settings.probe_time_limit_seconds):
                    probed = await asyncio.to_thread(probe, fetched.path, fetched.size_bytes)
            except Rejected as exc:
                raise AssetRejected(exc.reason) from exc
            except TimeoutError:
                raise AssetRejected("the file could not be analysed in time") from None
            if probed.kind != reg.type:
                raise AssetRejected(f"the file is {_a(probed.kind)}, not {_a(reg.type)}")
            asset = NewAsset(
                asset_id=new_id("asset"),
                team_id=team_id,
                type=reg.type,
                name=reg.name,
                path=fetched.path,
                probed=probed,
            )
            added = await self.library.add(asset)
            now = now_ms()
            record = AssetRecord(
                id=asset.asset_id,
                team_id=team_id,
                provider=provider,
                type=reg.type,
                name=reg.name,
                status=added.status,
                reason=added.reason,
                backend=self.library.backend,
                upstream_id=added.upstream_id,
                storage_key=added.storage_key,
                mime_type=probed.mime_type,
                size_bytes=probed.size_bytes,
                width=probed.width,
                height=probed.height,
                duration_ms=round(probed.duration_s * 1000) if probed.duration_s is not None else None,
                source_url=reg.url,
                created_at_ms=now,
                updated_at_ms=now,
            )
            try:
                await repo.insert_asset(self.engine, record)
            except BaseException:
                await self.library.discard(asset, added)
                raise
            await self.library.after_insert(asset, added)
        return view(record, registration=True)

    async def get(self, team_id: str, provider: str, asset_id: str) -> dict[str, Any]:
        check_provider(provider)
        record = await self._find(team_id, provider, asset_id)
        if record.status == AssetStatus.PROCESSING:
            fresh = await self.library.refresh(record)
            if fresh is not None and fresh[0] != AssetStatus.PROCESSING:
                status, reason = fresh
                now = now_ms()
                if await repo.finish_processing(self.engine, record.id, status=status, reason=reason, now_ms=now):
                    record = dataclasses.replace(record, status=status, reason=reason, updated_at_ms=now)
        return view(record)

    async def list_page(
        self, team_id: str, provider: str, *, limit: int, offset: int, status: str | None
    ) -> dict[str, Any]:
        check_provider(provider)
        if status is not None and status not in STATUSES:
            raise InvalidParameters("status must be active, processing, or failed", param="status")
        records, total = await repo.list_assets(self.engine, team_id, status=status, limit=limit, offset=offset)
        return {"assets": [view(r) for r in records], "total": total, "limit": limit, "offset": offset}

    async def delete(self, team_id: str, provider: str, asset_id: str) -> dict[str, Any]:
        check_provider(provider)
        record = await self._find(team_id, provider, asset_id)
        await self.library.remove(record)
        if await repo.delete_asset(self.engine, team_id, asset_id) is None:
            raise NotFound(f"no asset {asset_id!r}")
        return {"provider": provider, "asset_id": asset_id, "deleted": True}

    async def _find(self, team_id: str, provider: str, asset_id: str) -> AssetRecord:
        if not _ASSET_ID.match(asset_id):
            raise NotFound(f"no asset {asset_id[:80]!r}")
        record = await repo.get_asset(self.engine, team_id, asset_id)
        if record is None or record.provider != provider:
            raise NotFound(f"no asset {asset_id!r}")  # another team's asset looks the same: never a 403
        return record


def view(record: AssetRecord, *, registration: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"provider": record.provider, "asset_id": record.id, "type": record.type}
    if record.name is not None:
        out["name"] = record.name
    out["status"] = record.status
    if record.status == AssetStatus.FAILED and record.reason:
        out["reason"] = record.reason
    if not registration:
        out["created_at"] = record.created_at_ms // 1000
        out["updated_at"] = record.updated_at_ms // 1000
    return out


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
