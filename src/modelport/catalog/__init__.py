"""The model catalog: imported from a file, editable through admin, stored in the database.

The database is the single source for the model lists, so every process and machine sees the same
catalog. At start-up the catalog file is imported: entries it names are (re)written unless an operator
edited them through the admin API (`managed_by = 'admin'`); file-managed entries it no longer names are
removed. Each process keeps a snapshot and re-reads it every `refresh_seconds`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import tomllib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.catalog.tables import catalog_models
from modelport.catalog_spec import CatalogFile, MediaModel, TextModel
from modelport.clock import now_ms
from modelport.core.redaction import UPSTREAM_SECRETS, is_credential_header
from modelport.errors import InvalidParameters, NotFound

log = logging.getLogger("modelport.catalog")


class CatalogFileError(ValueError):
    pass


def load_catalog_file(path: Path | None) -> CatalogFile:
    try:
        if path is None:
            raw = resources.files("modelport").joinpath("default_catalog.toml").read_text("utf-8")
        else:
            raw = path.read_text("utf-8")
        data = tomllib.loads(raw) if (path is None or path.suffix != ".json") else _json(raw)
        catalog = CatalogFile.model_validate(data)
    except (OSError, tomllib.TOMLDecodeError, ValidationError, ValueError) as exc:
        raise CatalogFileError(f"catalog {path or 'default'}: {exc}") from exc
    legacy = [m.id for m in catalog.text_models if m.default_max_output_tokens is not None]
    if legacy:
        log.warning(
            "catalog %s: default_max_output_tokens is no longer used (the gateway sends no output cap the client "
            "did not ask for); set max_output_tokens to the model's maximum output instead: %s",
            path or "default",
            ", ".join(legacy),
        )
    return catalog


def _json(raw: str) -> Any:
    import json

    return json.loads(raw)


def _entries(catalog: CatalogFile) -> dict[str, tuple[str, dict[str, Any], bool]]:
    out: dict[str, tuple[str, dict[str, Any], bool]] = {}
    for text in catalog.text_models:
        out[text.id] = ("text", text.model_dump(mode="json"), text.active)
    for media in catalog.media_models:
        out[media.slug] = ("media", media.model_dump(mode="json"), media.active)
    return out


async def import_catalog(engine: AsyncEngine, catalog: CatalogFile) -> None:
    wanted = _entries(catalog)
    async with engine.begin() as conn:
        rows = (await conn.execute(select(catalog_models.c.slug, catalog_models.c.managed_by))).all()
        existing = {r.slug: r.managed_by for r in rows}
        for slug, managed_by in existing.items():
            if managed_by == "file" and slug not in wanted:
                await conn.execute(delete(catalog_models).where(catalog_models.c.slug == slug))
        for slug, (kind, spec, active) in wanted.items():
            if existing.get(slug) == "admin":
                continue
            if slug in existing:
                await conn.execute(
                    catalog_models.update()
                    .where(catalog_models.c.slug == slug)
                    .values(kind=kind, spec=spec, active=active, updated_at_ms=now_ms())
                )
            else:
                await conn.execute(
                    catalog_models.insert().values(
                        slug=slug, kind=kind, spec=spec, active=active, managed_by="file", updated_at_ms=now_ms()
                    )
                )


def parse_entry(kind: str, spec: dict[str, Any]) -> TextModel | MediaModel:
    try:
        if kind == "text":
            return TextModel.model_validate(spec)
        if kind == "media":
            return MediaModel.model_validate(spec)
    except ValidationError as exc:
        raise InvalidParameters(f"invalid {kind} model: {exc.errors()[0]['msg']}") from exc
    raise InvalidParameters("kind must be text or media", param="kind")


# Called inside an admin edit's transaction with the entry's stored spec before (None: new) and after (None:
# deleted): the caller records its audit event there, so the edit and its event commit together.
InTransaction = Callable[[AsyncConnection, dict[str, Any] | None, dict[str, Any] | None], Awaitable[None]]


async def _stored_spec(conn: AsyncConnection, slug: str) -> dict[str, Any] | None:
    row = (await conn.execute(select(catalog_models.c.spec).where(catalog_models.c.slug == slug))).first()
    return None if row is None else dict(row.spec)


async def put_model(
    engine: AsyncEngine, kind: str, spec: dict[str, Any], *, in_transaction: InTransaction | None = None
) -> TextModel | MediaModel:
    """Create or replace one entry through admin; the file import leaves it alone from then on."""
    entry = parse_entry(kind, spec)
    slug = entry.id if isinstance(entry, TextModel) else entry.slug
    values = {
        "kind": kind,
        "spec": entry.model_dump(mode="json"),
        "active": entry.active,
        "managed_by": "admin",
        "updated_at_ms": now_ms(),
    }
    async with engine.begin() as conn:
        before = await _stored_spec(conn, slug) if in_transaction is not None else None
        updated = await conn.execute(catalog_models.update().where(catalog_models.c.slug == slug).values(**values))
        if updated.rowcount == 0:
            await conn.execute(catalog_models.insert().values(slug=slug, **values))
        if in_transaction is not None:
            await in_transaction(conn, before, entry.model_dump(mode="json"))
    return entry


async def delete_model(engine: AsyncEngine, slug: str, *, in_transaction: InTransaction | None = None) -> None:
    async with engine.begin() as conn:
        before = await _stored_spec(conn, slug) if in_transaction is not None else None
        result = await conn.execute(delete(catalog_models).where(catalog_models.c.slug == slug))
        if in_transaction is not None and result.rowcount:
            await in_transaction(conn, before, None)
    if result.rowcount == 0:
        raise NotFound(f"no model {slug!r}")


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    """The models by name: text models by `id`, media models by `slug` (each sorted by it)."""

    text: dict[str, TextModel] = field(default_factory=dict)
    media: dict[str, MediaModel] = field(default_factory=dict)


async def read_snapshot(engine: AsyncEngine) -> CatalogSnapshot:
    async with engine.connect() as conn:
        rows = (await conn.execute(select(catalog_models).order_by(catalog_models.c.slug))).all()
    text: dict[str, TextModel] = {}
    media: dict[str, MediaModel] = {}
    for row in rows:
        entry = parse_entry(row.kind, row.spec)
        if isinstance(entry, TextModel):
            text[entry.id] = entry
        else:
            media[entry.slug] = entry
    UPSTREAM_SECRETS.add(upstream_secrets(text.values(), media.values()))
    return CatalogSnapshot(text=text, media=media)


def upstream_secrets(text: Iterable[TextModel], media: Iterable[MediaModel]) -> list[str | None]:
    """Every credential the catalog configures: its key variables' values and credential-like headers."""
    configured: list[tuple[str | None, dict[str, str]]] = [
        (d.api_key_env, d.headers) for model in text for d in model.deployments
    ]
    configured += [(m.upstream.api_key_env, m.upstream.headers) for m in media if m.upstream is not None]
    found: list[str | None] = []
    for key_env, headers in configured:
        found.append(os.environ.get(key_env) if key_env else None)
        found += [value for name, value in headers.items() if is_credential_header(name)]
    return found


class CatalogStore:
    """A per-process snapshot of the catalog, refreshed from the database every `refresh_seconds`."""

    def __init__(self, engine: AsyncEngine, *, refresh_seconds: float = 5.0) -> None:
        self._engine = engine
        self._refresh_seconds = refresh_seconds
        self._snapshot = CatalogSnapshot()
        self._loaded_at = float("-inf")
        self._reloading: asyncio.Task[None] | None = None

    async def get(self) -> CatalogSnapshot:
        if time.monotonic() - self._loaded_at >= self._refresh_seconds:
            if self._loaded_at == float("-inf"):
                await self._shared_reload()  # nothing to serve yet: wait for the first read
            elif self._reloading is None:
                # Serve the current snapshot; one background read refreshes it for every request.
                self._reloading = asyncio.create_task(self._shared_reload())
        return self._snapshot

    async def _shared_reload(self) -> None:
        try:
            await self.reload()
        except Exception:
            log.exception("catalog refresh failed; serving the previous snapshot")
            self._loaded_at = time.monotonic()  # retry after the next interval, not on every request
        finally:
            self._reloading = None

    async def reload(self) -> None:
        self._snapshot = await read_snapshot(self._engine)
        self._loaded_at = time.monotonic()
