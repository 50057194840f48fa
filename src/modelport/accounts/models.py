"""Plain records returned by the accounts service."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from modelport.accounts.limits import NO_LIMITS, KeyLimits
from modelport.money import display_usd


@dataclass(frozen=True, slots=True)
class Team:
    id: str
    name: str
    balance_micros: int
    frozen_micros: int
    tier: str
    asset_service: bool
    log_retention: bool
    created_at_ms: int
    suspended_at_ms: int | None = None
    # The team's own request-log window in days (None: the deployment's default; 0: kept forever).
    log_days: float | None = None
    # The response cache: off | team | key, and whether answers with tool calls are stored.
    cache: str = "off"
    cache_tool_calls: bool = False

    @property
    def suspended(self) -> bool:
        return self.suspended_at_ms is not None

    @property
    def available_usd(self) -> Decimal:
        return display_usd(self.balance_micros)

    @property
    def frozen_usd(self) -> Decimal:
        return display_usd(self.frozen_micros)

    def to_public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "tier": self.tier,
            "balance_usd": self.available_usd,
            "frozen_usd": self.frozen_usd,
            "asset_service": self.asset_service,
            "log_retention": self.log_retention,
            "created_at": self.created_at_ms // 1000,
            "suspended": self.suspended,
            "suspended_at": None if self.suspended_at_ms is None else self.suspended_at_ms // 1000,
            "log_days": self.log_days,
            "cache": self.cache,
            "cache_tool_calls": self.cache_tool_calls,
        }


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    team_id: str
    name: str | None
    prefix: str
    created_at_ms: int
    revoked_at_ms: int | None
    last_used_at_ms: int | None
    limits: KeyLimits = NO_LIMITS
    role: str = "member"
    created_by: str | None = None  # a user id; None: made with the admin token, the CLI or a key
    owner_user_id: str | None = None  # a personal key's owner; None: a team key

    @property
    def active(self) -> bool:
        return self.revoked_at_ms is None

    def to_public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "team_id": self.team_id,
            "name": self.name,
            "prefix": self.prefix,
            "active": self.active,
            "created_at": self.created_at_ms // 1000,
            "revoked_at": None if self.revoked_at_ms is None else self.revoked_at_ms // 1000,
            "last_used_at": None if self.last_used_at_ms is None else self.last_used_at_ms // 1000,
            "role": self.role,
            "created_by": self.created_by,
            "owner_user_id": self.owner_user_id,
            **self.limits.to_public(),
        }


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A new key: the only moment the plaintext exists outside the caller's hands."""

    key: str
    record: ApiKey
