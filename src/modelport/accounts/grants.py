"""No key gives more than it has: the rule the team keys API and the team console apply when a key
creates or changes a key (itself included)."""

from __future__ import annotations

import ipaddress
from fnmatch import fnmatchcase
from typing import Any

from modelport.accounts.auth import AuthContext
from modelport.accounts.limits import NO_LIMITS, KeyLimits, Network, limits_from_columns
from modelport.accounts.models import ApiKey
from modelport.errors import Forbidden

# How much a spend limit lets a key spend over time, least first: the same amount renews every day, week or
# month, or never (`total`).
PERIOD_BREADTH = {"total": 0, "month": 1, "week": 2, "day": 3}
_LIMIT_COLUMNS = ("spend_limit_micros", "spend_limit_period", "models", "rpm", "tpm", "expires_at_ms", "allowed_ips")


def columns_of(record: ApiKey) -> dict[str, Any]:
    """A key's limit and role columns, as `check_key_fields` produces them."""
    limits = record.limits
    return {
        "spend_limit_micros": limits.spend_limit_micros,
        "spend_limit_period": limits.spend_limit_period,
        "models": None if limits.models is None else list(limits.models),
        "rpm": limits.rpm,
        "tpm": limits.tpm,
        "expires_at_ms": limits.expires_at_ms,
        "allowed_ips": None if limits.allowed_ips is None else [str(n) for n in limits.allowed_ips],
        "role": record.role,
    }


def check_grant(auth: AuthContext, columns: dict[str, Any], base: ApiKey | None = None) -> None:
    """403 unless the key these column values leave behind (over `base`'s, for a change) has no more rights
    than the calling key: every limit the caller has, no looser, and a role no higher; and a key changing
    itself keeps its spend limit's period (another period would count its spend from zero)."""
    merged = {**({} if base is None else columns_of(base)), **columns}
    requested = limits_from_columns({name: merged.get(name) for name in _LIMIT_COLUMNS})
    refused = within(auth.limits or NO_LIMITS, auth.role, requested, merged.get("role") or "member")
    if refused is not None:
        raise Forbidden(f"this API key cannot give a key more than its own {refused}")
    if base is not None and base.id == auth.key_id and _restarts_period(base.limits, requested):
        # Spend is counted per period (`key_spend` rows by period start): another period starts from zero.
        raise Forbidden("this API key cannot change its own spend_limit_period")


def _restarts_period(current: KeyLimits, requested: KeyLimits) -> bool:
    """Would a key with a spend limit be left counting its spend in another period?"""
    return current.spend_limit_micros is not None and requested.spend_limit_period != current.spend_limit_period


def within(granted: KeyLimits, role: str, requested: KeyLimits, requested_role: str) -> str | None:
    """Why a key with `granted` limits and `role` may not give `requested` (None: it may): no limit looser
    than its own (a spend limit no larger and over a period no shorter), no role above its own. Used by the
    team keys API and the team console, so a key never raises its rights."""
    if requested_role == "admin" and role != "admin":
        return "role"
    mine = granted.spend_limit_micros
    if mine is not None and (requested.spend_limit_micros is None or requested.spend_limit_micros > mine):
        return "spend_limit_usd"
    if mine is not None and PERIOD_BREADTH[requested.spend_limit_period] > PERIOD_BREADTH[granted.spend_limit_period]:
        return "spend_limit_period"  # the same amount per shorter period is more money over time
    for name in ("rpm", "tpm"):
        mine, theirs = getattr(granted, name), getattr(requested, name)
        if mine is not None and (theirs is None or theirs > mine):
            return name
    if granted.expires_at_ms is not None and (
        requested.expires_at_ms is None or requested.expires_at_ms > granted.expires_at_ms
    ):
        return "expires_at"
    if granted.models is not None and (
        requested.models is None or not all(_narrower(p, granted.models) for p in requested.models)
    ):
        return "models"
    if granted.allowed_ips is not None and (
        requested.allowed_ips is None
        or not all(any(_subnet(n, g) for g in granted.allowed_ips) for n in requested.allowed_ips)
    ):
        return "allowed_ips"
    return None


_WILDCARDS = frozenset("*?[")


def _narrower(pattern: str, granted: tuple[str, ...]) -> bool:
    """Does `pattern` name only models `granted` allows? Exact patterns and literal ids are judged exactly;
    a prefix pattern (`openai/gpt-*`) is within a granted prefix pattern (`openai/*`); anything else is not."""
    if pattern in granted:
        return True
    if not _WILDCARDS & set(pattern):
        return any(fnmatchcase(pattern, g) for g in granted)
    head, star = pattern[:-1], pattern[-1:]
    if star != "*" or _WILDCARDS & set(head):
        return False
    return any(g.endswith("*") and not _WILDCARDS & set(g[:-1]) and head.startswith(g[:-1]) for g in granted)


def _subnet(inner: Network, outer: Network) -> bool:
    if isinstance(inner, ipaddress.IPv4Network) and isinstance(outer, ipaddress.IPv4Network):
        return inner.subnet_of(outer)
    if isinstance(inner, ipaddress.IPv6Network) and isinstance(outer, ipaddress.IPv6Network):
        return inner.subnet_of(outer)
    return False
