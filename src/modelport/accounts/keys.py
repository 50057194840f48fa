"""API key material: generation, the visible prefix, and the stored hash.

A key is `mp-` followed by 43 URL-safe characters (256 random bits). Only its SHA-256 is stored; with that
much entropy a slow password hash buys nothing and would cost every request CPU time.
"""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "mp-"
VISIBLE_PREFIX_LENGTH = 10


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def visible_prefix(key: str) -> str:
    return key[:VISIBLE_PREFIX_LENGTH]
