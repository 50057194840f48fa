"""The OpenID Connect client of single sign-on, on Authlib (its Starlette client): discovery from
`{issuer}/.well-known/openid-configuration`, the authorization URL with PKCE (S256), `state` and `nonce`,
the code exchange, and the ID token's checks (signature against the provider's JWKS, fetched again when a
token names a key it does not hold: rotation; `iss`, `aud`, `exp`, `iat`, `nonce`, `at_hash`).

One per console app (its caches: the provider's metadata and keys). Every failure is a `ProviderRefused`
whose message a person can read; the token itself never reaches a message or a log.
"""

from __future__ import annotations

import importlib
import logging
import time
from typing import Any

import httpx
from authlib.integrations.base_client import OAuthError
from authlib.integrations.starlette_client import OAuth
from joserfc import errors as jose_errors

from modelport.settings import OidcSettings

log = logging.getLogger(__name__)

LEEWAY_SECONDS = 60  # clock skew between this server and the provider
MAX_TOKEN_AGE_SECONDS = 10 * 60  # an ID token fresh from the token endpoint is seconds old
TIMEOUT_SECONDS = 10.0


def _http_errors() -> tuple[type[Exception], ...]:
    # Authlib's httpx client runs on `httpx2` when that is installed (else `httpx`): catch either's errors.
    try:
        second = importlib.import_module("httpx2")
    except ImportError:
        return (httpx.HTTPError,)
    return (httpx.HTTPError, second.HTTPError)


HTTP_ERRORS = _http_errors()
FETCH_ERRORS: tuple[type[Exception], ...] = (*HTTP_ERRORS, ValueError)
USERINFO_ERRORS: tuple[type[Exception], ...] = (*HTTP_ERRORS, OAuthError, ValueError)


class ProviderRefused(Exception):
    """The provider's answer was not accepted: `reason` for the audit log, `message` for the person."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _claim_message(claim: str, display: str) -> str:
    return {
        "aud": f"{display}'s answer was meant for another application (check MODELPORT_OIDC__CLIENT_ID).",
        "iss": f"{display}'s answer came from another issuer than the one configured.",
        "nonce": "This sign-in's answer did not belong to it (it was replayed or mixed up): start again.",
        "iat": f"{display}'s answer was not issued just now: check this server's clock, then start again.",
        "sub": f"{display}'s answer did not say who signed in.",
    }.get(claim, f"{display}'s answer had an invalid {claim!r} claim.")


class OidcProvider:
    def __init__(self, settings: OidcSettings, redirect_uri: str) -> None:
        assert settings.issuer is not None and settings.client_id is not None
        self.settings = settings
        self.issuer = settings.issuer
        self.client_id = settings.client_id
        self.redirect_uri = redirect_uri
        secret = settings.client_secret()
        oauth = OAuth()
        self._app: Any = oauth.register(
            "idp",
            client_id=settings.client_id,
            client_secret=secret,
            server_metadata_url=self.issuer.rstrip("/") + "/.well-known/openid-configuration",
            client_kwargs={
                "scope": settings.scopes,
                "code_challenge_method": "S256",
                "timeout": TIMEOUT_SECONDS,
                # A public client (no secret) authenticates with PKCE alone.
                "token_endpoint_auth_method": "client_secret_basic" if secret else "none",
            },
        )

    @property
    def display(self) -> str:
        return self.settings.display_name

    async def _metadata(self) -> dict[str, Any]:
        try:
            metadata: dict[str, Any] = await self._app.load_server_metadata()
        except FETCH_ERRORS as exc:
            self._app.server_metadata = {}  # try discovery again next time
            log.warning("OIDC discovery at %s failed: %s", self.issuer, type(exc).__name__)
            raise ProviderRefused("discovery", f"{self.display} could not be reached: try again later.") from None
        if metadata.get("issuer") != self.issuer:
            self._app.server_metadata = {}
            log.warning("OIDC discovery names issuer %r, configured %r", metadata.get("issuer"), self.issuer)
            raise ProviderRefused("discovery", f"{self.display} is not configured correctly here (issuer mismatch).")
        return metadata

    async def authorization(self) -> dict[str, str]:
        """A new authorization request: `url` to send the browser to, and the `state`, `nonce` and
        `code_verifier` the callback needs (kept by the caller, bound to the browser)."""
        await self._metadata()
        made = await self._app.create_authorization_url(self.redirect_uri)
        return {k: str(made[k]) for k in ("url", "state", "nonce", "code_verifier")}

    async def finish(self, code: str, *, nonce: str, code_verifier: str) -> dict[str, Any]:
        """Exchange the code (with the PKCE verifier) and check the ID token; the claims (with userinfo's
        when the ID token lacks the email or the groups)."""
        await self._metadata()
        try:
            token: dict[str, Any] = await self._app.fetch_access_token(
                code=code, code_verifier=code_verifier, redirect_uri=self.redirect_uri
            )
        except OAuthError as exc:
            log.warning("OIDC code exchange refused: %s", exc.error)
            message = f"{self.display} did not accept this sign-in: start again."
            raise ProviderRefused("code_exchange", message) from None
        except HTTP_ERRORS as exc:
            log.warning("OIDC code exchange failed: %s", type(exc).__name__)
            raise ProviderRefused("code_exchange", f"{self.display} could not be reached: try again later.") from None
        claims = await self.check_id_token(token, nonce)
        if claims.get("email") is None or self.settings.groups_claim not in claims:
            claims = {**(await self._userinfo(token, str(claims["sub"]))), **claims}
        return claims

    async def _userinfo(self, token: dict[str, Any], subject: str) -> dict[str, Any]:
        metadata = await self._metadata()
        if not metadata.get("userinfo_endpoint") or not token.get("access_token"):
            return {}
        try:
            info = dict(await self._app.userinfo(token=token))
        except USERINFO_ERRORS as exc:
            log.warning("OIDC userinfo failed: %s", type(exc).__name__)
            return {}
        return info if info.get("sub") == subject else {}  # another person's answer is none

    async def check_id_token(self, token: dict[str, Any], nonce: str) -> dict[str, Any]:
        """The ID token's claims once every check passed, else `ProviderRefused`."""
        if not isinstance(token.get("id_token"), str):
            raise ProviderRefused("no_id_token", f"{self.display} answered without an ID token.")
        metadata = await self._metadata()
        if not metadata.get("jwks_uri") and not metadata.get("jwks"):
            raise ProviderRefused("discovery", f"{self.display} publishes no signing keys (jwks_uri).")

        def fresh(_claims: object, iat: object) -> bool:
            return isinstance(iat, int | float) and iat >= time.time() - MAX_TOKEN_AGE_SECONDS - LEEWAY_SECONDS

        options = {
            "iss": {"essential": True, "value": self.issuer},
            "aud": {"essential": True, "value": self.client_id},
            "sub": {"essential": True},
            "exp": {"essential": True},
            "iat": {"essential": True, "validate": fresh},
            "nonce": {"essential": True, "value": nonce},
        }
        display = self.display
        try:
            claims = await self._app.parse_id_token(token, nonce=nonce, claims_options=options, leeway=LEEWAY_SECONDS)
        except jose_errors.ExpiredTokenError:
            raise ProviderRefused("expired", f"{display}'s answer had expired: check this server's clock.") from None
        except jose_errors.ClaimError as exc:
            raise ProviderRefused(f"claim_{exc.claim}", _claim_message(exc.claim, display)) from None
        except (jose_errors.BadSignatureError, jose_errors.InvalidKeyIdError, jose_errors.MissingKeyError):
            raise ProviderRefused("signature", f"{display}'s answer was not signed with its keys.") from None
        except jose_errors.JoseError as exc:
            log.warning("OIDC ID token refused: %s", type(exc).__name__)
            raise ProviderRefused("id_token", f"{display}'s answer could not be read.") from None
        except FETCH_ERRORS as exc:
            log.warning("OIDC keys at %s could not be fetched: %s", metadata.get("jwks_uri"), type(exc).__name__)
            raise ProviderRefused("jwks", f"{display}'s signing keys could not be fetched: try again later.") from None
        return dict(claims)
