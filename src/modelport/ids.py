"""Prefixed random identifiers (`team_…`, `key_…`, `file_…`, `req_…`)."""

from __future__ import annotations

import os
import random
import secrets

# Ids that must be unique but need not be unguessable (a request's id, a settlement's key) come from a
# generator seeded from the OS once per process (again in a forked child): `secrets` reads the OS's random
# source with a system call per id, a measurable share of a text request's CPU.
_UNIQUE = random.Random()
os.register_at_fork(after_in_child=_UNIQUE.seed)


def new_id(prefix: str, nbytes: int = 12) -> str:
    return f"{prefix}_{secrets.token_hex(nbytes)}"


def unique_id(prefix: str, nbytes: int = 12) -> str:
    """Like `new_id` (same shape) but not for anything a guess could exploit: per-request internal ids."""
    return f"{prefix}_{_UNIQUE.getrandbits(nbytes * 8):0{nbytes * 2}x}"
