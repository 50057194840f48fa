"""What a key may do beyond its team's limits: spend limit per UTC period, model patterns, RPM/TPM, expiry,
allowed client addresses and role.

`KeyLimits` is parsed once from the key's row and cached with the key (`accounts.auth`), so the checks on
the hot path are in memory: an expiry comparison, a CIDR membership, `fnmatch` over a few patterns.
`check_key_fields` validates what the admin API, the CLI, the consoles and the team keys API accept.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from fnmatch import fnmatchcase, translate
from typing import Any

from modelport.errors import InvalidParameters
from modelport.money import MAX_TOPUP_USD, MICROS_PER_USD, micros_to_usd

PERIODS = ("day", "week", "month", "total")
ROLES = ("member", "admin")
MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 200
MAX_NETWORKS = 100
MAX_RATE = 1_000_000_000
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


# -- checking what callers send ----------------------------------------------------------------------------

KEY_FIELDS = (
    "name",
    "spend_limit_usd",
    "spend_limit_period",
    "models",
    "rpm",
    "tpm",
    "expires_at",
    "allowed_ips",
    "role",
)


def _usd(value: Any) -> int:
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise InvalidParameters("spend_limit_usd must be a number of USD", param="spend_limit_usd") from None
    if not amount.is_finite() or amount < 0 or amount > MAX_TOPUP_USD:
        raise InvalidParameters(f"spend_limit_usd must be between 0 and {MAX_TOPUP_USD} USD", param="spend_limit_usd")
    return int(amount * MICROS_PER_USD)


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RATE:
        raise InvalidParameters(f"{name} must be a whole number from 1 to {MAX_RATE}", param=name)
    return value


def _patterns(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or len(value) > MAX_PATTERNS:
        raise InvalidParameters(f"models must be a list of 1 to {MAX_PATTERNS} model-id patterns", param="models")
    out = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_PATTERN_LENGTH or "\x00" in item:
            raise InvalidParameters(
                f"each models entry is a model-id pattern such as 'openai/*' (1-{MAX_PATTERN_LENGTH} characters)",
                param="models",
            )
        out.append(item.strip())
    return out


def _networks(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or len(value) > MAX_NETWORKS:
        raise InvalidParameters(f"allowed_ips must be a list of 1 to {MAX_NETWORKS} CIDRs", param="allowed_ips")
    out = []
    for item in value:
        try:
            out.append(str(ipaddress.ip_network(str(item).strip(), strict=False)))
        except ValueError:
            raise InvalidParameters(
                f"allowed_ips: {str(item)[:64]!r} is not an IP address or CIDR", param="allowed_ips"
            ) from None
    return out


def _expiry(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**40:
        raise InvalidParameters("expires_at must be a Unix time in seconds", param="expires_at")
    return value * 1000


def check_key_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Column values for the key fields in `fields` (public names → `api_keys` columns); a field given as
    None clears that limit. Raises InvalidParameters naming the field."""
    unknown = set(fields) - set(KEY_FIELDS)
    if unknown:
        raise InvalidParameters(f"unknown key fields: {', '.join(sorted(unknown))}", param=sorted(unknown)[0])
    values: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "name":
            if value is not None and (not isinstance(value, str) or len(value) > 100 or "\x00" in value):
                raise InvalidParameters("name is at most 100 characters", param="name")
            values["name"] = value or None
        elif name == "spend_limit_usd":
            values["spend_limit_micros"] = None if value is None else _usd(value)
        elif name == "spend_limit_period":
            if value is not None and value not in PERIODS:
                raise InvalidParameters(
                    "spend_limit_period must be one of " + ", ".join(PERIODS), param="spend_limit_period"
                )
            values["spend_limit_period"] = value
        elif name == "models":
            values["models"] = None if value is None else _patterns(value)
        elif name in ("rpm", "tpm"):
            values[name] = None if value is None else _count(value, name)
        elif name == "expires_at":
            values["expires_at_ms"] = None if value is None else _expiry(value)
        elif name == "allowed_ips":
            values["allowed_ips"] = None if value is None else _networks(value)
        elif name == "role":
            if value not in ROLES:
                raise InvalidParameters("role must be member or admin", param="role")
            values["role"] = value
    return values


def within(granted: KeyLimits, role: str, requested: KeyLimits, requested_role: str) -> str | None:
    """Why a key with `granted` limits and `role` may not give `requested` (None: it may): no limit looser
    than its own, no role above its own. Used by the team keys API, so a key never raises its rights."""
    if requested_role == "admin" and role != "admin":
        return "role"
    mine = granted.spend_limit_micros
    if mine is not None and (requested.spend_limit_micros is None or requested.spend_limit_micros > mine):
        return "spend_limit_usd"
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


def parse_expiry(text: str) -> int:
    """`expires_at` (Unix seconds) from what a person types: Unix seconds, a date (`2027-01-01`, midnight
    UTC) or an ISO date-time (UTC unless it names its offset)."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidParameters(
            f"expires: {value[:40]!r} is not a date (2027-01-01), a date-time or Unix seconds", param="expires_at"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp())


def fields_from_text(options: dict[str, str | None]) -> dict[str, Any]:
    """Key fields from text options (the CLI's, the console's forms): each given option becomes its field;
    `none` (or empty) clears a limit. Keys: spend_limit, period, models, rpm, tpm, expires, allow_ip, role, name."""
    fields: dict[str, Any] = {}
    for option, raw in options.items():
        if raw is None:
            continue
        value = raw.strip()
        clear = value.lower() in ("", "none")
        if option == "name":
            fields["name"] = value or None
        elif option == "spend_limit":
            fields["spend_limit_usd"] = None if clear else value
        elif option == "period":
            if not clear:
                fields["spend_limit_period"] = value
        elif option == "models":
            fields["models"] = None if clear else [p.strip() for p in value.split(",") if p.strip()]
        elif option in ("rpm", "tpm"):
            if clear:
                fields[option] = None
            elif not value.isdigit():
                raise InvalidParameters(f"{option} must be a whole number", param=option)
            else:
                fields[option] = int(value)
        elif option == "expires":
            fields["expires_at"] = None if clear else parse_expiry(value)
        elif option == "allow_ip":
            fields["allowed_ips"] = None if clear else [n.strip() for n in value.split(",") if n.strip()]
        elif option == "role":
            fields["role"] = value
    return fields
