"""The key limit form both consoles share (`macros.limit_fields`): its values for a key, and the key
fields a submitted form gives (`accounts.limits.fields_from_text`: an empty box clears that limit)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request

from modelport.accounts.key_fields import fields_from_text
from modelport.accounts.models import ApiKey

FORM_FIELDS = ("name", "spend_limit", "period", "models", "rpm", "tpm", "expires", "allow_ip", "role")


def form_values(key: ApiKey) -> dict[str, Any]:
    """A key's limits as the edit form shows them."""
    limits = key.limits
    expires = None if limits.expires_at_ms is None else datetime.fromtimestamp(limits.expires_at_ms / 1000, UTC)
    return {
        "spend_limit": "" if limits.spend_limit_micros is None else str(limits.to_public()["spend_limit_usd"]),
        "period": limits.spend_limit_period,
        "models": ",".join(limits.models or ()),
        "rpm": "" if limits.rpm is None else str(limits.rpm),
        "tpm": "" if limits.tpm is None else str(limits.tpm),
        "expires": "" if expires is None else expires.strftime("%Y-%m-%dT%H:%M"),
        "allow_ip": ",".join(str(n) for n in limits.allowed_ips or ()),
        "role": key.role,
    }


async def key_form_fields(request: Request) -> dict[str, Any]:
    form = await request.form()
    text = {name: value if isinstance(value := form.get(name), str) else None for name in FORM_FIELDS}
    if not text.get("role"):
        text["role"] = None
    return fields_from_text(text)
