"""Webhook signing secrets at rest, sealed by the service's secret box (`modelport/secret_box.py`).

A stored secret is `mpws1.` + the sealed 32 random bytes of the `whsec_...` secret, with the team id as
associated data (a row copied to another team does not open), under the key for this one purpose (label
`modelport:webhook-secrets:v1`, unchanged since secrets were first sealed), so the database alone never
yields a secret that signs deliveries.

Rows written before encryption at rest hold the `whsec_...` text: they are read as they are, and sealed
by the next `serve` start (`reseal_all` in `secrets.py`), as are secrets sealed under the previous secret
key (docs/security.md, Rotating the secret key).
"""

from __future__ import annotations

import base64
from functools import cache

from modelport.secret_box import Purpose, UnreadableSecret
from modelport.secret_box import SecretBox as _Box

PLAIN_PREFIX = "whsec_"
SEALED_PREFIX = "mpws1."
WEBHOOK_SECRETS = Purpose(label="modelport:webhook-secrets:v1", prefix=SEALED_PREFIX, noun="webhook secret")

__all__ = ["PLAIN_PREFIX", "SEALED_PREFIX", "SecretBox", "UnreadableSecret", "secret_box"]


class SecretBox:
    def __init__(self, secret_key: str, previous_key: str | None = None) -> None:
        self._box = _Box(secret_key, previous_key, purpose=WEBHOOK_SECRETS)

    def seal(self, team_id: str, secret: str) -> str:
        if not secret.startswith(PLAIN_PREFIX):
            raise ValueError("not a whsec_ secret")
        return self._box.seal(team_id, base64.b64decode(secret[len(PLAIN_PREFIX) :], validate=True))

    def open(self, team_id: str, stored: str) -> str:
        """The `whsec_...` secret of a stored value (sealed, or plain from before encryption at rest)."""
        return self._open(team_id, stored)[0]

    def is_current(self, team_id: str, stored: str) -> bool:
        """Sealed under the current key (nothing to re-seal)."""
        return self._open(team_id, stored)[1]

    def _open(self, team_id: str, stored: str) -> tuple[str, bool]:
        if stored.startswith(PLAIN_PREFIX):
            return stored, False
        raw, current = self._box.open(team_id, stored)
        return PLAIN_PREFIX + base64.b64encode(raw).decode("ascii"), current


@cache
def secret_box(secret_key: str, previous_key: str | None = None) -> SecretBox:
    """One box per key pair in a process."""
    return SecretBox(secret_key, previous_key)
