"""Request dependencies: the process's services, and authentication for each host.

Media host: `Authorization: Bearer <key>` only. Text gateway: Bearer or `x-api-key`, equivalent; both
present with different values is a 401. A credential header sent twice is a 401 too: which copy a proxy
or a server keeps differs, so none is trusted.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from starlette.requests import Request

from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission, check_permission
from modelport.clock import now_ms
from modelport.errors import AuthenticationFailed, NotFound, RateLimited
from modelport.protocols import KEY_HEADERS
from modelport.services import Services


class MediaAuthFailed(AuthenticationFailed):
    """The media host's fixed 401 message: `Authentication failed: invalid team`."""

    def __init__(self) -> None:
        super().__init__("invalid team")


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


class DuplicateCredentialHeader(Exception):
    """`Authorization` or `x-api-key` appears more than once in one request."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def single_header(request: Request, name: str) -> str | None:
    """The header's one value, None when absent; raises DuplicateCredentialHeader when sent twice."""
    values = request.headers.getlist(name)
    if len(values) > 1:
        raise DuplicateCredentialHeader(name)
    return values[0] if values else None


def bearer_token(request: Request) -> str | None:
    return _bearer(single_header(request, "authorization"))


def _bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer` value; "" for another scheme or an empty token."""
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return ""
    return token.strip()


async def media_auth(request: Request) -> AuthContext:
    try:
        token = bearer_token(request)
    except DuplicateCredentialHeader:
        raise MediaAuthFailed() from None
    if not token:
        raise MediaAuthFailed()
    context = await get_services(request).auth.authenticate(token)
    if context is None or (context.limits is not None and context.refusal(now_ms(), client_host(request))):
        raise MediaAuthFailed()
    request.state.auth = context
    return context


def media_auth_with(permission: Permission) -> Callable[[Request], Awaitable[AuthContext]]:
    """`media_auth`, then 403 unless the key's role has `permission` (`accounts.permissions`: the table the
    team console checks too)."""

    async def dependency(request: Request) -> AuthContext:
        auth = await media_auth(request)
        check_permission(auth, permission)
        return auth

    return dependency


_KEY_HEADERS_HINT = "".join(f" or {name}: <key>" for name in KEY_HEADERS)
_CREDENTIAL_NAMES = frozenset({b"authorization", *(name.lower().encode("latin-1") for name in KEY_HEADERS)})


def text_api_key(request: Request) -> str:
    """The key from ``Authorization: Bearer`` or a protocol's own key header (`protocols.KEY_HEADERS`)."""
    found: dict[bytes, str] = {}
    # One pass over the raw headers (ASGI names are lower case): this runs on every text request, and
    # Starlette's `Headers` is built and searched once per header name.
    for name, value in request.scope["headers"]:
        if name in _CREDENTIAL_NAMES:
            if name in found:
                raise AuthenticationFailed(f"more than one {name.decode()} header", code="invalid_api_key")
            found[name] = value.decode("latin-1")
    key = _bearer(found.get(b"authorization"))
    for name in KEY_HEADERS:
        value = found.get(name.encode("latin-1"))
        if value is None:
            continue
        if key is not None and key != value.strip():
            raise AuthenticationFailed(f"conflicting API keys in Authorization and {name}", code="invalid_api_key")
        key = key or value.strip()
    if not key:
        raise AuthenticationFailed(
            f"Missing API key: send Authorization: Bearer <key>{_KEY_HEADERS_HINT}", code="invalid_api_key"
        )
    return key


async def text_auth(request: Request) -> AuthContext:
    key = text_api_key(request)
    resolved = await get_services(request).auth.resolve(key)
    context = resolved.context
    if resolved.suspended:
        raise AuthenticationFailed(
            "This API key's team is suspended: ask the service's operator", code="team_suspended"
        )
    if context is None:
        raise AuthenticationFailed("Invalid API key", code="invalid_api_key")
    if context.limits is not None:
        refused = context.refusal(now_ms(), client_host(request))
        if refused == "key_expired":
            raise AuthenticationFailed("This API key has expired", code="key_expired")
        if refused is not None:
            raise AuthenticationFailed("This API key may not be used from this address", code="ip_not_allowed")
    request.state.auth = context
    return context


def client_host(request: Request) -> str | None:
    """The client's address as the server saw it (behind trusted proxies, the forwarded one: uvicorn's
    proxy-headers handling fills `scope["client"]`)."""
    client = request.scope.get("client")
    return client[0] if client else None


def client_address(request: Request) -> str:
    """The client's address: the ASGI server puts the real one in scope["client"] (forwarded headers are
    honoured only from `server.trusted_proxies`)."""
    return request.client.host if request.client else "unknown"


async def admin_token_matches(request: Request, candidate: str) -> bool:
    """Whether `candidate` is the admin token; a wrong one is counted per client address.

    Checked first, counted after, as the console's team sign-in: the right token is never refused by the
    limit (behind a proxy that is not a trusted one every client shares an address, so refusing before the
    comparison let any stranger lock the operator out). Past `admin_failures_per_minute` failures a wrong
    token is answered RateLimited instead of a 401. Guessing is answered by the token's length (at least 32
    characters, `settings.py`), not by the limit, which slows sprays and keeps the log readable. Shared by
    the admin API and the operator console's sign-in (one count per address)."""
    services = get_services(request)
    configured = services.settings.admin_token
    if configured is None:
        return False
    if candidate and hmac.compare_digest(candidate.encode(), configured.get_secret_value().encode()):
        return True
    limit = services.settings.admin_failures_per_minute
    decision = await services.limiters.rate.hit(f"admin-token-failures:{client_address(request)}", limit)
    if not decision.allowed:
        raise RateLimited(
            f"too many failed admin token attempts from this address; try again in {decision.retry_after} s",
            headers={"Retry-After": str(decision.retry_after)},
        )
    return False


async def operator_auth(request: Request) -> None:
    """Operator routes (`/admin/v1/...`) answer 404 (not 401) when no admin token is configured: they do not
    exist then."""
    if get_services(request).settings.admin_token is None:
        raise NotFound(f"no route {request.method} {request.url.path}")
    try:
        token = bearer_token(request) or ""
    except DuplicateCredentialHeader:
        token = ""
    if not await admin_token_matches(request, token):
        raise AuthenticationFailed("invalid admin token")
