"""A real OpenID provider for the single sign-on tests: `oidc-provider-mock` (Authlib's authorization server in
Flask) on a thread of the test process, and the browser's side of a sign-in through it (an httpx client that
follows the redirects by hand, posting the provider's consent form with the subject to sign in as)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from oidc_provider_mock import run_server_in_thread

from tests.support.console import ConsoleClient


@dataclass(frozen=True)
class Provider:
    issuer: str

    def set_user(self, sub: str, claims: dict[str, Any]) -> None:
        """The claims the provider puts in `sub`'s next ID token (groups and email_verified included)."""
        answer = httpx.put(f"{self.issuer}/users/{sub}", json=claims, timeout=10)
        assert answer.status_code == 204, answer.text


@contextmanager
def oidc_provider() -> Iterator[Provider]:
    # The provider serves plain http on localhost: Authlib's server refuses that without this.
    os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"
    with run_server_in_thread(require_nonce=True) as server:
        yield Provider(f"http://localhost:{server.server_port}")


@dataclass(frozen=True)
class Returned:
    """Where the provider sent the browser back: the callback URL (with code and state)."""

    callback: str


def to_provider(client: ConsoleClient, start: httpx.Response, sub: str) -> Returned:
    """From modelport's redirect to the provider, through its consent form as `sub`, to the callback URL."""
    assert start.status_code == 302, start.text
    authorize = start.headers["location"]
    assert "code_challenge_method=S256" in authorize and "nonce=" in authorize and "state=" in authorize
    consent = httpx.post(authorize, data={"sub": sub}, timeout=10, follow_redirects=False)
    assert consent.status_code == 302, consent.text
    return Returned(consent.headers["location"])


def sso_sign_in(client: ConsoleClient, sub: str, next_path: str | None = None) -> httpx.Response:
    """A whole sign-in in `client`: start, the provider as `sub`, the callback; the callback's answer."""
    start = client.get("/oidc/start", params={"next": next_path} if next_path else None)
    return client.http.get(to_provider(client, start, sub).callback)
