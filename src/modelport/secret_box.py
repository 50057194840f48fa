"""Secrets at rest: AES-256-GCM under a key derived from the service's secret key, one key per purpose.

A sealed value is `<prefix>` + base64url(nonce ‖ ciphertext ‖ tag), with a context (the owning row's id:
a team, a user) as associated data, so a value copied to another row does not open. The key is an HMAC of
the service's secret key (`MODELPORT_SECRET_KEY`, or the generated `<data dir>/secret_key`) with the
purpose's label, so the database alone never yields a secret, and a value sealed for one purpose (a
webhook secret) does not open as another (a TOTP secret).

Rotating the secret key: set the old one as `MODELPORT_PREVIOUS_SECRET_KEY` beside the new
`MODELPORT_SECRET_KEY`; values sealed under either open, `is_current` tells which need re-sealing (each
owner re-seals its rows at `serve`'s start; docs/security.md, Rotating the secret key).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_NONCE_BYTES = 12


class UnreadableSecret(Exception):
    """A sealed secret that neither the current nor the previous secret key opens."""


@dataclass(frozen=True, slots=True)
class Purpose:
    """What a box seals: the label its key is derived with (never changed once values are sealed: they
    would no longer open), the prefix that marks a sealed value, and the noun its errors use."""

    label: str
    prefix: str
    noun: str


def derive_key(secret_key: str, label: str) -> bytes:
    return hmac.new(secret_key.encode("utf-8"), label.encode("utf-8"), hashlib.sha256).digest()


def _aead(key: bytes) -> AESGCM:
    # cryptography is imported with the first secret a process seals or opens, not at start.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SecretBox:
    def __init__(self, secret_key: str, previous_key: str | None = None, *, purpose: Purpose) -> None:
        self.purpose = purpose
        label = purpose.label
        self._keys = (derive_key(secret_key, label), derive_key(previous_key, label) if previous_key else None)
        self._ciphers: tuple[AESGCM, AESGCM | None] | None = None

    def _aeads(self) -> tuple[AESGCM, AESGCM | None]:
        if self._ciphers is None:
            current, previous = self._keys
            self._ciphers = (_aead(current), _aead(previous) if previous else None)
        return self._ciphers

    def is_sealed(self, stored: str) -> bool:
        return stored.startswith(self.purpose.prefix)

    def seal(self, context: str, raw: bytes) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = nonce + self._aeads()[0].encrypt(nonce, raw, context.encode("utf-8"))
        return self.purpose.prefix + base64.urlsafe_b64encode(sealed).decode("ascii").rstrip("=")

    def open(self, context: str, stored: str) -> tuple[bytes, bool]:
        """The raw secret of a sealed value, and whether it was sealed under the current key."""
        if not self.is_sealed(stored):
            raise UnreadableSecret(f"a stored {self.purpose.noun} has an unknown form")
        from cryptography.exceptions import InvalidTag

        blob = _b64decode(stored[len(self.purpose.prefix) :])
        nonce, body = blob[:_NONCE_BYTES], blob[_NONCE_BYTES:]
        current_aead, previous_aead = self._aeads()
        for aead, current in ((current_aead, True), (previous_aead, False)):
            if aead is None:
                continue
            try:
                return aead.decrypt(nonce, body, context.encode("utf-8")), current
            except InvalidTag:
                continue
        raise UnreadableSecret(
            f"a {self.purpose.noun} was encrypted with another secret key: set the key it was made with as "
            "MODELPORT_PREVIOUS_SECRET_KEY (docs/security.md, Rotating the secret key)"
        )


@cache
def secret_box(secret_key: str, previous_key: str | None, purpose: Purpose) -> SecretBox:
    """One box per key pair and purpose in a process."""
    return SecretBox(secret_key, previous_key, purpose=purpose)
