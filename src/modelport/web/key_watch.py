"""The API key of a long-lived request (a live status stream, a `Prefer: wait` hold), checked again as it runs.

A request is authenticated once, when it arrives; a stream can then run for as long as its client reads.
`KeyWatch` asks the authenticator again at least every auth cache period (`MODELPORT_AUTH_CACHE_SECONDS`,
at least once a `MIN_RECHECK_SECONDS`), so a key revoked, expired or whose team was suspended ends the
stream as soon as it would refuse a new request, plus at most one period.
"""

from __future__ import annotations

import time

from starlette.requests import Request

from modelport.accounts.auth import Authenticator
from modelport.clock import now_ms
from modelport.web.deps import DuplicateCredentialHeader, bearer_token, client_host, get_services

# With no auth cache (`0`), a re-check every wake-up of the stream would read the key row each time; once a
# second bounds that and is still prompt.
MIN_RECHECK_SECONDS = 1.0


class KeyWatch:
    def __init__(self, auth: Authenticator, key: str, client: str | None, *, every: float) -> None:
        self._auth = auth
        self._key = key
        self._client = client
        self.every = max(every, MIN_RECHECK_SECONDS)
        self._next = time.monotonic() + self.every

    def due_in(self) -> float:
        """Seconds until the next re-check (0 when due): how long a stream may sleep before asking `valid`."""
        return max(0.0, self._next - time.monotonic())

    async def valid(self) -> bool:
        """False once the key no longer authenticates (revoked, expired, team suspended, address no longer
        allowed); asks the authenticator only when a re-check is due."""
        if time.monotonic() < self._next:
            return True
        self._next = time.monotonic() + self.every
        context = await self._auth.authenticate(self._key)
        return context is not None and context.refusal(now_ms(), self._client) is None


def watch_key(request: Request) -> KeyWatch:
    """The watch of a media request's bearer key; call after `media_auth` accepted it."""
    services = get_services(request)
    try:
        key = bearer_token(request) or ""
    except DuplicateCredentialHeader:  # media_auth refused it already; an empty key never authenticates
        key = ""
    return KeyWatch(services.auth, key, client_host(request), every=services.settings.auth_cache_seconds)
