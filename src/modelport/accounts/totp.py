"""The second factor: TOTP (RFC 6238 through pyotp: 30-second steps, 6 digits, one step of clock drift either
way) and 10 single-use recovery codes, stored as SHA-256 (each has 40 random bits: a fast hash suffices, as
for API keys)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

import pyotp

ISSUER = "modelport"
RECOVERY_CODES = 10


def new_secret() -> str:
    return pyotp.random_base32()


def provisioning_uri(secret: str, email: str) -> str:
    """The `otpauth://` URI an authenticator app reads (as a QR code or typed in)."""
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)


def code_step(secret: str, code: str, *, at: float | None = None) -> int | None:
    """The 30-second step whose code `code` is (now, or one step either side), None when it is none; the
    caller accepts a step only once (no replay within the window)."""
    code = code.replace(" ", "")
    if len(code) != 6 or not code.isascii() or not code.isdigit():
        return None
    otp = pyotp.TOTP(secret)
    now = time.time() if at is None else at
    for offset in (0, -1, 1):
        moment = now + offset * otp.interval
        if hmac.compare_digest(otp.at(moment), code):
            return int(moment // otp.interval)
    return None


def code_valid(secret: str, code: str) -> bool:
    return code_step(secret, code) is not None


def current_code(secret: str) -> str:
    """The code an authenticator shows now (tests and the CLI's checks)."""
    return pyotp.TOTP(secret).now()


def new_recovery_codes() -> list[str]:
    return [f"{secrets.token_hex(3)[:5]}-{secrets.token_hex(3)[:5]}" for _ in range(RECOVERY_CODES)]


def recovery_digest(code: str) -> str:
    return hashlib.sha256(code.strip().lower().encode("utf-8", "replace")).hexdigest()


def matching_recovery(stored: list[str], code: str) -> str | None:
    """The stored digest `code` matches (to remove it: single use), None when it matches none."""
    digest = recovery_digest(code)
    for candidate in stored:
        if hmac.compare_digest(candidate, digest):
            return candidate
    return None
