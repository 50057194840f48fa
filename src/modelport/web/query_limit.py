"""Query RPM for the text gateway's listing calls (`GET /v1/models`, `GET /v1/logs`), counted apart from
inference RPM (spec, Limits)."""

from __future__ import annotations

from starlette.requests import Request

from modelport.accounts.auth import AuthContext
from modelport.ratelimit import rate_limit_headers, rate_limited_error
from modelport.web.deps import get_services


async def enforce_query_limit(request: Request, auth: AuthContext) -> dict[str, str]:
    """Count one query for the team; 429 `rate_limit_exceeded` when over. Returns the headers to send."""
    services = get_services(request)
    tier = services.settings.tier(auth.tier)
    decision = await services.limiters.rate.hit(f"team:{auth.team_id}:query", tier.query_rpm)
    if not decision.allowed:
        raise rate_limited_error(decision, f"query rate limit of {tier.query_rpm} requests per minute")
    return rate_limit_headers(decision)
