"""Prefixed random identifiers (`team_…`, `key_…`, `file_…`, `req_…`)."""

from __future__ import annotations

import secrets


def new_id(prefix: str, nbytes: int = 12) -> str:
    return f"{prefix}_{secrets.token_hex(nbytes)}"
