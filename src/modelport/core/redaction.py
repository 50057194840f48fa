"""The process's configured upstream secrets, and their removal from text an upstream sent us.

Some upstreams quote the credential they were sent in an error message. Whatever of an upstream's error
reaches a client or a log row (relayed error messages, error events in streams, the deployment health
the operator sees, request-log rows) goes through `UPSTREAM_SECRETS.scrub` first. The secrets are the
values of the catalog's `api_key_env` variables and its credential-like header values, registered when a
catalog snapshot is read (`catalog.read_snapshot`); a value and its `Bearer ` form both become
`[redacted]`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"
# Shorter values would mangle ordinary words of a message; no real credential is this short.
MIN_SECRET_CHARS = 8
_CREDENTIAL_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|password|credential", re.IGNORECASE)


def is_credential_header(name: str) -> bool:
    return _CREDENTIAL_HEADER.search(name) is not None


class SecretScrubber:
    def __init__(self) -> None:
        self._secrets: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def add(self, values: Iterable[str | None]) -> None:
        """Register secrets (kept for the life of the process: a key rotated out may still be quoted)."""
        found: set[str] = set()
        for value in values:
            if not value:
                continue
            value = value.strip()
            scheme, _, token = value.partition(" ")
            for candidate in (value, token.strip() if scheme.lower() in ("bearer", "basic", "key") else ""):
                if len(candidate) >= MIN_SECRET_CHARS:
                    found.add(candidate)
        if found <= self._secrets:
            return
        self._secrets = self._secrets | found
        # Longest first, so a value is removed whole before any secret it contains; `Bearer ` with it.
        alternatives = "|".join(re.escape(s) for s in sorted(self._secrets, key=len, reverse=True))
        self._pattern = re.compile(rf"(?:Bearer\s+)?(?:{alternatives})", re.IGNORECASE)

    def scrub(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(REDACTED, text)

    def scrub_optional(self, text: str | None) -> str | None:
        return None if text is None else self.scrub(text)


UPSTREAM_SECRETS = SecretScrubber()
