"""The fields of a key as callers send them (admin API, CLI, consoles, the team keys API): checked and turned
into `api_keys` column values, each refusal a 400 naming its field."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from modelport.accounts.limits import PERIODS
from modelport.errors import InvalidParameters
from modelport.money import MAX_TOPUP_USD, MICROS_PER_USD
from modelport.strict_int import plain_int

ROLES = ("member", "admin")
MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 200
MAX_NETWORKS = 100
MAX_RATE = 1_000_000_000

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


def parse_expiry(text: str) -> int:
    """`expires_at` (Unix seconds) from what a person types: Unix seconds, a date (`2027-01-01`, midnight
    UTC) or an ISO date-time (UTC unless it names its offset)."""
    value = text.strip()
    seconds = plain_int(value)
    if seconds is not None:
        return seconds
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
            elif (count := plain_int(value)) is None:
                raise InvalidParameters(f"{option} must be a whole number", param=option)
            else:
                fields[option] = count
        elif option == "expires":
            fields["expires_at"] = None if clear else parse_expiry(value)
        elif option == "allow_ip":
            fields["allowed_ips"] = None if clear else [n.strip() for n in value.split(",") if n.strip()]
        elif option == "role":
            fields["role"] = value
    return fields
