"""A key's own requests-per-minute limit on the media host (task creations); the text gateway counts the
same limiter key in `gateway.metering`, so one RPM covers a key's text requests and media creations."""

from __future__ import annotations

from modelport.accounts.auth import AuthContext
from modelport.errors import RateLimited
from modelport.ratelimit import rate_limit_headers
from modelport.services import Services


def key_rpm_limiter_key(key_id: str) -> str:
    return f"key:{key_id}:rpm"


def key_tpm_limiter_key(key_id: str) -> str:
    return f"key:{key_id}:tpm"


async def key_rates_left(services: Services, auth: AuthContext) -> dict[str, int | None]:
    """What is left right now of the key's own RPM and TPM (None: no such limit); counts nothing."""
    limits = auth.limits
    left: dict[str, int | None] = {"rpm": None, "tpm": None}
    if limits is None:
        return left
    for name, limit, key in (
        ("rpm", limits.rpm, key_rpm_limiter_key(auth.key_id)),
        ("tpm", limits.tpm, key_tpm_limiter_key(auth.key_id)),
    ):
        if limit is not None:
            left[name] = (await services.limiters.rate.hit(key, limit, 60, 0)).remaining
    return left


async def enforce_key_rpm(services: Services, auth: AuthContext) -> dict[str, str]:
    """Count one request against the key's RPM (none: nothing to do); 429 with the key's own headers."""
    limits = auth.limits
    if limits is None or limits.rpm is None:
        return {}
    decision = await services.limiters.rate.hit(key_rpm_limiter_key(auth.key_id), limits.rpm)
    headers = rate_limit_headers(decision)
    if not decision.allowed:
        raise RateLimited(f"this API key's rate limit of {limits.rpm} requests per minute is reached", headers=headers)
    return headers
