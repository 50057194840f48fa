"""The operator's verbs, in one place: the admin CLI, the admin API and the operator console all call these.

Teams (create, show, list, flags, tier, suspend), keys (create, list, revoke), top-ups with a note, ledger
reads, and catalog edits. Its package sits just above accounts, billing and the catalog, which it reaches
together.

Inside a serving process the operator is built with the process's key cache and catalog snapshot
(`Operator.for_services`): a change that affects who may call what (revocation, suspension, tier, flags)
empties the key cache, and a catalog edit reloads the snapshot, so this process sees it at once (others
within `auth_cache_seconds` and the catalog refresh interval). The CLI builds one on a bare engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport import catalog as catalog_ops
from modelport.accounts import audit, console_sessions
from modelport.accounts import service as accounts
from modelport.accounts.audit import Actor
from modelport.accounts.auth import Authenticator
from modelport.accounts.models import ApiKey, CreatedKey, Team
from modelport.billing.ledger import LedgerEntry, read_entries
from modelport.billing.topups import TopupResult, topup_team
from modelport.catalog import CatalogSnapshot, CatalogStore, read_snapshot
from modelport.catalog_spec import MediaModel, TextModel
from modelport.errors import InvalidParameters
from modelport.response_cache import RESPONSE_CACHE
from modelport.response_cache.controls import CacheMode, check_mode
from modelport.response_cache.store import CacheStore
from modelport.services import Services
from modelport.settings import TierSettings

MAX_KEY_NAME = 100


def _text(value: str | None, *, param: str, limit: int) -> str | None:
    """A free-text field as the database can hold it: PostgreSQL refuses NUL in text (a 400 here, not a 500)."""
    if value is None:
        return None
    if "\x00" in value:
        raise InvalidParameters(f"{param} must not contain a NUL character", param=param)
    if len(value) > limit:
        raise InvalidParameters(f"{param} is at most {limit} characters", param=param)
    return value


def check_tier(tiers: list[TierSettings], tier: str) -> None:
    names = [t.name for t in tiers]
    if tier not in names:
        raise InvalidParameters(f"unknown tier {tier!r}; tiers: {', '.join(names)}", param="tier")


MAX_LOG_DAYS = 36_500.0  # a hundred years: beyond, 0 (forever) says it better


def check_log_days(days: float | str | None) -> float | None:
    if days is None or (isinstance(days, str) and days.strip().lower() in {"", "default"}):
        return None
    try:
        value = float(days)
    except ValueError:
        raise InvalidParameters("log_days must be a number of days, 0 (forever) or default", param="log_days") from None
    if not 0 <= value <= MAX_LOG_DAYS:  # also refuses NaN
        raise InvalidParameters(f"log_days must be between 0 and {MAX_LOG_DAYS:g}", param="log_days")
    return value


@dataclass(frozen=True, slots=True)
class Operator:
    engine: AsyncEngine
    tiers: list[TierSettings]
    auth: Authenticator | None = None
    catalog: CatalogStore | None = None
    actor: Actor | None = None  # who acts: every change records an audit event (accounts/audit.py)
    # The response cache's store: a team's entries are purged when its cache is turned off.
    cache: CacheStore | None = None

    @classmethod
    def for_services(cls, services: Services, actor: Actor) -> Operator:
        try:
            cache: CacheStore | None = services[RESPONSE_CACHE].store
        except LookupError:
            cache = None
        return cls(
            services.db, services.settings.tiers, auth=services.auth, catalog=services.catalog, actor=actor, cache=cache
        )

    def _access_changed(self) -> None:
        if self.auth is not None:
            self.auth.evict_all()

    # Teams

    async def list_teams(self) -> list[Team]:
        return await accounts.list_teams(self.engine)

    async def team(self, ref: str) -> Team:
        return await accounts.get_team(self.engine, ref)

    async def create_team(self, name: str) -> Team:
        return await accounts.create_team(self.engine, name, tier=self.tiers[0].name, actor=self.actor)

    async def set_flags(
        self, ref: str, *, asset_service: bool | None = None, log_retention: bool | None = None
    ) -> Team:
        changes = {
            k: v for k, v in {"asset_service": asset_service, "log_retention": log_retention}.items() if v is not None
        }
        updated = await accounts.update_team(self.engine, ref, actor=self.actor, **changes)
        self._access_changed()
        return updated

    async def set_cache(self, ref: str, *, cache: str | None = None, tool_calls: bool | None = None) -> Team:
        """The team's response cache (off | team | key) and whether answers with tool calls are stored;
        turned off, its stored answers are purged at once."""
        changes: dict[str, Any] = {}
        if cache is not None:
            changes["cache"] = check_mode(cache).value
        if tool_calls is not None:
            changes["cache_tool_calls"] = tool_calls
        if not changes:
            return await self.team(ref)
        updated = await accounts.update_team(self.engine, ref, actor=self.actor, **changes)
        self._access_changed()
        if updated.cache == CacheMode.OFF and cache is not None:
            await self._purge(updated.id)
        return updated

    async def purge_cache(self, ref: str) -> tuple[Team, int]:
        """Remove every stored answer of the team; how many there were."""
        found = await accounts.get_team(self.engine, ref)
        gone = await self._purge(found.id)
        async with self.engine.begin() as conn:
            after = {"entries_purged": gone}
            await audit.record(conn, self.actor, "team.cache_purge", team_id=found.id, target=found.id, after=after)
        return found, gone

    async def _purge(self, team_id: str) -> int:
        return 0 if self.cache is None else await self.cache.purge(team_id)

    async def set_log_days(self, ref: str, days: float | str | None) -> Team:
        """The team's own request-log window in days (fractions allowed; 0: forever; None: the default)."""
        return await accounts.update_team(self.engine, ref, actor=self.actor, log_days=check_log_days(days))

    async def set_tier(self, ref: str, tier: str) -> Team:
        check_tier(self.tiers, tier)
        updated = await accounts.update_team(self.engine, ref, tier=tier, actor=self.actor)
        self._access_changed()
        return updated

    async def suspend(self, ref: str) -> Team:
        updated = await accounts.set_suspended(self.engine, ref, True, actor=self.actor)
        self._access_changed()
        return updated

    async def unsuspend(self, ref: str) -> Team:
        updated = await accounts.set_suspended(self.engine, ref, False, actor=self.actor)
        self._access_changed()
        return updated

    async def end_sessions(self, ref: str) -> tuple[Team, int]:
        """End every console session of a team at once (each member signs in again); how many there were."""
        found = await accounts.get_team(self.engine, ref)
        async with self.engine.begin() as conn:
            ended = await console_sessions.end_for_team(conn, found.id)
            if ended:
                after = {"sessions_ended": ended}
                await audit.record(
                    conn, self.actor, "team.end_sessions", team_id=found.id, target=found.id, after=after
                )
        return found, ended

    async def session_count(self, ref: str) -> int:
        found = await accounts.get_team(self.engine, ref)
        return await console_sessions.count_for_team(self.engine, found.id)

    # Money

    async def topup(self, ref: str, amount_usd: Decimal | str, *, note: str | None = None) -> TopupResult:
        note = _text(note, param="note", limit=255)
        result = await topup_team(self.engine, self.tiers, ref, amount_usd, note=note, actor=self.actor)
        self._access_changed()  # the tier may have changed: limits are read from the cached context
        return result

    async def ledger(self, ref: str, *, limit: int = 100, before_id: int | None = None) -> list[LedgerEntry]:
        found = await accounts.get_team(self.engine, ref)
        return await read_entries(self.engine, found.id, limit=limit, before_id=before_id)

    # Keys

    async def create_key(
        self,
        ref: str,
        *,
        name: str | None = None,
        fields: dict[str, Any] | None = None,
        owner_user_id: str | None = None,
    ) -> CreatedKey:
        """A new key; `fields`: its limits and role by their public names (accounts.limits.KEY_FIELDS).
        A team key unless `owner_user_id` names the member whose personal key it is."""
        name = _text(name, param="name", limit=MAX_KEY_NAME)
        return await accounts.create_key(
            self.engine, ref, name=name or None, fields=fields, actor=self.actor, owner_user_id=owner_user_id
        )

    async def update_key(self, key_id: str, fields: dict[str, Any]) -> ApiKey:
        """Change a key's name, limits or role; every process sees it within `auth_cache_seconds`."""
        record = await accounts.update_key(self.engine, key_id, fields, actor=self.actor)
        self._access_changed()
        return record

    async def key(self, key_id: str) -> ApiKey:
        return await accounts.get_key(self.engine, key_id)

    async def list_keys(self, ref: str) -> Sequence[ApiKey]:
        return await accounts.list_keys(self.engine, ref)

    async def revoke_key(self, key_id: str) -> ApiKey:
        record = await accounts.revoke_key(self.engine, key_id, actor=self.actor)
        self._access_changed()
        return record

    # Catalog

    def _catalog_event(self, action: str, slug: str) -> catalog_ops.InTransaction:
        async def record(conn: AsyncConnection, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
            await audit.record(conn, self.actor, action, team_id=None, target=slug, before=before, after=after)

        return record

    async def models(self) -> CatalogSnapshot:
        """The catalog as stored now (not the snapshot a few seconds old)."""
        if self.catalog is None:
            return await read_snapshot(self.engine)
        await self.catalog.reload()
        return await self.catalog.get()

    async def put_model(self, kind: str, slug: str, spec: dict[str, Any]) -> TextModel | MediaModel:
        key = "id" if kind == "text" else "slug"
        entry = await catalog_ops.put_model(
            self.engine, kind, {**spec, key: slug}, in_transaction=self._catalog_event("catalog.put", slug)
        )
        if self.catalog is not None:
            await self.catalog.reload()
        return entry

    async def delete_model(self, slug: str) -> None:
        await catalog_ops.delete_model(self.engine, slug, in_transaction=self._catalog_event("catalog.delete", slug))
        if self.catalog is not None:
            await self.catalog.reload()
