"""What a key may do beyond its team's limits: spend limit per UTC period, model patterns, RPM/TPM, expiry
and allowed client addresses (its role is a column of its own).

`KeyLimits` is parsed once from the key's row and cached with the key (`accounts.auth`), so the checks on
the hot path are in memory, and each answer (an address, a model id, the current period) is remembered with
it. What callers may send is checked in `accounts.key_fields`; who may grant what in `accounts.grants`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import translate
from typing import Any

from modelport.money import micros_to_usd

PERIODS = ("day", "week", "month", "total")
_DAY_MS = 86_400_000
# 1970-01-01 was a Thursday: day numbers shifted by 3 make Monday the first day of an ISO week.
_MONDAY_SHIFT = 3

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def period_start_ms(period: str, at_ms: int) -> int:
    """The UTC start of the `period` containing `at_ms`: its day, ISO week (Monday), month; 0 for `total`."""
    if period == "total":
        return 0
    day = at_ms // _DAY_MS
    if period == "day":
        return day * _DAY_MS
    if period == "week":
        return ((day + _MONDAY_SHIFT) // 7 * 7 - _MONDAY_SHIFT) * _DAY_MS
    when = datetime.fromtimestamp(at_ms / 1000, UTC)
    return int(datetime(when.year, when.month, 1, tzinfo=UTC).timestamp() * 1000)


def period_end_ms(period: str, start_ms: int) -> int | None:
    """When the period starting at `start_ms` ends (None: `total` never does)."""
    if period == "total":
        return None
    if period == "day":
        return start_ms + _DAY_MS
    if period == "week":
        return start_ms + 7 * _DAY_MS
    when = datetime.fromtimestamp(start_ms / 1000, UTC)
    year, month = (when.year + 1, 1) if when.month == 12 else (when.year, when.month + 1)
    return int(datetime(year, month, 1, tzinfo=UTC).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class KeyLimits:
    """A key's own limits; each None when it has none beyond the team's."""

    spend_limit_micros: int | None = None
    spend_limit_period: str = "month"
    models: tuple[str, ...] | None = None
    rpm: int | None = None
    tpm: int | None = None
    expires_at_ms: int | None = None
    allowed_ips: tuple[Network, ...] | None = None
    # Answers already worked out for this key (the limits live as long as its auth cache entry): the hot
    # path then costs a dict lookup per check instead of parsing an address or matching patterns.
    _seen_hosts: dict[str | None, bool] = field(default_factory=dict, compare=False, repr=False)
    _seen_models: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    _span: list[int] = field(default_factory=lambda: [0, 0], compare=False, repr=False)

    @property
    def empty(self) -> bool:
        return (
            self.spend_limit_micros is None
            and self.models is None
            and self.rpm is None
            and self.tpm is None
            and self.expires_at_ms is None
            and self.allowed_ips is None
        )

    def expired(self, at_ms: int) -> bool:
        return self.expires_at_ms is not None and at_ms >= self.expires_at_ms

    def ip_allowed(self, host: str | None) -> bool:
        if self.allowed_ips is None:
            return True
        known = self._seen_hosts.get(host)
        if known is None:
            if len(self._seen_hosts) >= _MAX_SEEN:
                self._seen_hosts.clear()
            known = self._seen_hosts[host] = self._check_host(host)
        return known

    def _check_host(self, host: str | None) -> bool:
        assert self.allowed_ips is not None
        if host is None:
            return False
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.allowed_ips)

    def may_use(self, model_id: str) -> bool:
        if self.models is None:
            return True
        known = self._seen_models.get(model_id)
        if known is None:
            if len(self._seen_models) >= _MAX_SEEN:
                self._seen_models.clear()
            known = self._seen_models[model_id] = _patterns_regex(self.models).match(model_id) is not None
        return known

    def period_start(self, at_ms: int) -> int:
        """`period_start_ms` of the spend period, remembered until the period ends."""
        span = self._span
        if not span[0] <= at_ms < span[1] or not span[1]:
            start = period_start_ms(self.spend_limit_period, at_ms)
            span[0], span[1] = start, period_end_ms(self.spend_limit_period, start) or 2**62
        return span[0]

    def to_public(self) -> dict[str, Any]:
        return {
            "spend_limit_usd": None if self.spend_limit_micros is None else micros_to_usd(self.spend_limit_micros),
            "spend_limit_period": None if self.spend_limit_micros is None else self.spend_limit_period,
            "models": None if self.models is None else list(self.models),
            "rpm": self.rpm,
            "tpm": self.tpm,
            "expires_at": None if self.expires_at_ms is None else self.expires_at_ms // 1000,
            "allowed_ips": None if self.allowed_ips is None else [str(n) for n in self.allowed_ips],
        }


NO_LIMITS = KeyLimits()
_MAX_SEEN = 1024


def _patterns_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regular expression for all of a key's patterns (shell-glob semantics, as `fnmatchcase`)."""
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns))


def limits_from_columns(m: Any) -> KeyLimits:
    """The limits of an `api_keys` row mapping (values were checked when written)."""
    models = m["models"]
    ips = m["allowed_ips"]
    return KeyLimits(
        spend_limit_micros=None if m["spend_limit_micros"] is None else int(m["spend_limit_micros"]),
        spend_limit_period=m["spend_limit_period"] or "month",
        models=None if models is None else tuple(str(p) for p in models),
        rpm=None if m["rpm"] is None else int(m["rpm"]),
        tpm=None if m["tpm"] is None else int(m["tpm"]),
        expires_at_ms=None if m["expires_at_ms"] is None else int(m["expires_at_ms"]),
        allowed_ips=None if ips is None else tuple(ipaddress.ip_network(str(n), strict=False) for n in ips),
    )
