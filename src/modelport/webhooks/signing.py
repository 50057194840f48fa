"""Standard Webhooks headers for one delivery attempt, signed with the `standardwebhooks` package."""

from __future__ import annotations

from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook


def signed_headers(msg_id: str, body: str, secrets: list[str], at_ms: int) -> dict[str, str]:
    """`webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature`: one `v1,...` per secret, space
    separated (the current secret first; during a rotation the previous one too)."""
    timestamp = datetime.fromtimestamp(at_ms // 1000, tz=UTC)
    signatures = " ".join(Webhook(secret).sign(msg_id, timestamp, body) for secret in secrets)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(at_ms // 1000),
        "webhook-signature": signatures,
        "content-type": "application/json",
    }
