"""Webhook signing secrets at rest: AES-256-GCM under a key derived from the service's secret key.

A stored secret is `mpws1.` + base64url(nonce ‖ ciphertext ‖ tag) of the secret's 32 random bytes, with
the team id as associated data (a row copied to another team does not open). The key is an HMAC of
the service's secret key (`MODELPORT_SECRET_KEY`, or the generated `<data dir>/secret_key`) for this one
purpose, so the database alone never yields a secret that signs deliveries.

Rows written before encryption at rest hold the `whsec_...` text: they are read as they are, and sealed
by the next `serve` start (`reseal_all` in `secrets.py`). Rotating the secret key: set the old one as
`MODELPORT_PREVIOUS_SECRET_KEY` beside the new `MODELPORT_SECRET_KEY`; secrets sealed under either open,
and the next start re-seals them under the new key (docs/security.md, Rotating the secret key).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PLAIN_PREFIX = "whsec_"
SEALED_PREFIX = "mpws1."
_NONCE_BYTES = 12


class UnreadableSecret(Exception):
    """A sealed secret that neither the current nor the previous secret key opens."""


def derive_key(secret_key: str) -> bytes:
    return hmac.new(secret_key.encode("utf-8"), b"modelport:webhook-secrets:v1", hashlib.sha256).digest()


def _aead(key: bytes) -> AESGCM:
    # cryptography is imported with the first webhook secret a process reads or makes, not at start.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SecretBox:
    def __init__(self, secret_key: str, previous_key: str | None = None) -> None:
        self._keys = (derive_key(secret_key), derive_key(previous_key) if previous_key else None)
        self._ciphers: tuple[AESGCM, AESGCM | None] | None = None

    def _aeads(self) -> tuple[AESGCM, AESGCM | None]:
        if self._ciphers is None:
            current, previous = self._keys
            self._ciphers = (_aead(current), _aead(previous) if previous else None)
        return self._ciphers

    def seal(self, team_id: str, secret: str) -> str:
        if not secret.startswith(PLAIN_PREFIX):
            raise ValueError("not a whsec_ secret")
        raw = base64.b64decode(secret[len(PLAIN_PREFIX) :], validate=True)
        nonce = os.urandom(_NONCE_BYTES)
        sealed = nonce + self._aeads()[0].encrypt(nonce, raw, team_id.encode("utf-8"))
        return SEALED_PREFIX + base64.urlsafe_b64encode(sealed).decode("ascii").rstrip("=")

    def open(self, team_id: str, stored: str) -> str:
        """The `whsec_...` secret of a stored value (sealed, or plain from before encryption at rest)."""
        raw, _ = self._open(team_id, stored)
        return raw

    def is_current(self, team_id: str, stored: str) -> bool:
        """Sealed under the current key (nothing to re-seal)."""
        return self._open(team_id, stored)[1]

    def _open(self, team_id: str, stored: str) -> tuple[str, bool]:
        if stored.startswith(PLAIN_PREFIX):
            return stored, False
        if not stored.startswith(SEALED_PREFIX):
            raise UnreadableSecret("a stored webhook secret has an unknown form")
        from cryptography.exceptions import InvalidTag

        blob = _b64decode(stored[len(SEALED_PREFIX) :])
        nonce, body = blob[:_NONCE_BYTES], blob[_NONCE_BYTES:]
        current_aead, previous_aead = self._aeads()
        for aead, current in ((current_aead, True), (previous_aead, False)):
            if aead is None:
                continue
            try:
                raw = aead.decrypt(nonce, body, team_id.encode("utf-8"))
            except InvalidTag:
                continue
            return PLAIN_PREFIX + base64.b64encode(raw).decode("ascii"), current
        raise UnreadableSecret(
            "a webhook secret was encrypted with another secret key: set the key it was made with as "
            "MODELPORT_PREVIOUS_SECRET_KEY (docs/security.md, Rotating the secret key)"
        )


@cache
def secret_box(secret_key: str, previous_key: str | None = None) -> SecretBox:
    """One box per key pair in a process."""
    return SecretBox(secret_key, previous_key)
