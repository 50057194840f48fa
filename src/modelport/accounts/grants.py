"""No key gives more than it has: the rule the team keys API and the team console apply when a key
creates or changes a key (itself included)."""

from __future__ import annotations

from typing import Any

from modelport.accounts.auth import AuthContext
from modelport.accounts.limits import NO_LIMITS, limits_from_columns, within
from modelport.accounts.models import ApiKey
from modelport.errors import Forbidden

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
    than the calling key: every limit the caller has, no looser, and a role no higher."""
    merged = {**({} if base is None else columns_of(base)), **columns}
    requested = limits_from_columns({name: merged.get(name) for name in _LIMIT_COLUMNS})
    refused = within(auth.limits or NO_LIMITS, auth.role, requested, merged.get("role") or "member")
    if refused is not None:
        raise Forbidden(f"this API key cannot give a key more than its own {refused}")
