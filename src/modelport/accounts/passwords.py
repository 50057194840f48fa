"""Passwords: argon2id hashes (argon2-cffi's defaults, RFC 9106's second recommendation) and the rules a new
password must meet: at least 12 characters, at most 256, and not one of the common passwords below (what
breach lists show people pick at that length, per NIST SP 800-63B's "commonly used" check).
"""

from __future__ import annotations

import asyncio
import threading

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from modelport.errors import InvalidParameters

MIN_LENGTH = 12
MAX_LENGTH = 256  # argon2 takes any length; a cap keeps one sign-in's work bounded

_HASHER = PasswordHasher()
# Verified when no account has the email given, so a sign-in takes as long whether the email exists or not.
# A fixed hash made with the hasher's parameters (a unit test holds them equal), not hashed at import: that
# cost ~0.25 CPU s in every process that imports accounts (each `serve` start and CLI call).
_ABSENT = "$argon2id$v=19$m=65536,t=3,p=4$plx16MbJ3fuBiIlDQUg+Pg$M9tvqGbBgbyujJ5N4rRk3fYrPCy1+u0IwnfpjGO0hm0"

# Common passwords of 12 characters or more (compared lower-cased), from the most-used lists in breaches.
COMMON_PASSWORDS = frozenset(
    {
        "123456789012",
        "1234567890123",
        "12345678901234",
        "123456789123",
        "111111111111",
        "000000000000",
        "123123123123",
        "112233445566",
        "123451234512",
        "qwertyuiopas",
        "qwertyuiop123",
        "qwertyuiop12",
        "1q2w3e4r5t6y",
        "1qaz2wsx3edc",
        "qazwsxedcrfv",
        "zaq12wsxcde3",
        "asdfghjkl123",
        "zxcvbnm12345",
        "passwordpassword",
        "password1234",
        "password12345",
        "password123456",
        "password123!",
        "p@ssw0rd1234",
        "passw0rd1234",
        "mypassword123",
        "letmein12345",
        "iloveyou1234",
        "iloveyouiloveyou",
        "welcome12345",
        "welcome123456",
        "administrator",
        "administrator1",
        "admin1234567",
        "adminadmin123",
        "changeme1234",
        "changemenow1",
        "trustno1trustno1",
        "sunshine1234",
        "football1234",
        "baseball1234",
        "superman1234",
        "princess1234",
        "starwars1234",
        "whatever1234",
        "qwerty123456",
        "qwertyqwerty",
        "abcdefghijkl",
        "abcdefg12345",
        "abc123abc123",
        "abcd1234abcd",
        "aaaaaaaaaaaa",
        "monkey123456",
        "dragon123456",
        "master123456",
        "computer1234",
        "internet1234",
        "secret123456",
        "123qweasdzxc",
        "1234qwerasdf",
        "q1w2e3r4t5y6",
        "a1b2c3d4e5f6",
        "correcthorsebatterystaple",
        "thisismypassword",
        "mypasswordis",
        "ilovemyfamily",
        "fuckyou12345",
        "michael12345",
        "jennifer1234",
        "jordan231234",
        "liverpool123",
        "chelsea12345",
        "manchester12",
        "blink182blink",
        "pokemon12345",
        "minecraft123",
        "letmeinletmein",
        "passwordqwerty",
        "password1!23",
        "welcomewelcome",
        "samsung12345",
        "google123456",
        "facebook1234",
        "1234567890qwerty",
        "0987654321qwerty",
        "9876543210",
        "987654321098",
        "147258369147",
        "159753159753",
        "741852963741",
        "asdfasdfasdf",
        "zxcvzxcvzxcv",
        "qweasdzxc123",
        "modelport1234",
        "modelportadmin",
    }
)


def check_new_password(password: str, *, email: str | None = None) -> None:
    """400 naming the rule a new password breaks."""
    if len(password) < MIN_LENGTH:
        raise InvalidParameters(f"a password has at least {MIN_LENGTH} characters", param="password")
    if len(password) > MAX_LENGTH:
        raise InvalidParameters(f"a password has at most {MAX_LENGTH} characters", param="password")
    lowered = password.lower()
    if lowered in COMMON_PASSWORDS or len(set(lowered)) <= 2:
        raise InvalidParameters("that password is too common: choose another", param="password")
    if email is not None and lowered == email.lower():
        raise InvalidParameters("a password must not be the email address", param="password")


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify_password(stored: str | None, password: str) -> bool:
    """Whether `password` matches `stored`; None (no password set, or no such account) is checked against a
    fixed hash so the answer takes the same time."""
    if len(password) > MAX_LENGTH:
        return False
    try:
        return _HASHER.verify(stored or _ABSENT, password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    return _HASHER.check_needs_rehash(stored)


# argon2 is CPU- and memory-bound by design (64 MiB, ~50 ms each): it runs in threads, never on the event
# loop, and at most this many at once per process, so a spray of sign-ins cannot starve the process.
_SLOTS = threading.BoundedSemaphore(2)


def _verify_bounded(stored: str | None, password: str) -> bool:
    with _SLOTS:
        return verify_password(stored, password)


def _hash_bounded(password: str) -> str:
    with _SLOTS:
        return hash_password(password)


async def verify_password_off_loop(stored: str | None, password: str) -> bool:
    return await asyncio.to_thread(_verify_bounded, stored, password)


async def hash_password_off_loop(password: str) -> str:
    return await asyncio.to_thread(_hash_bounded, password)
