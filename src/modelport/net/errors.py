"""Why a server-side fetch of a user URL was refused or failed.

Every one is a 400 `Invalid parameters: ...` in the host's error shape (the user gave us a URL we will
not or cannot read), so a route can let them propagate. `kind` names the cause for callers that decide
on it (a webhook sender retries `origin_error` and `too_slow`, never `forbidden_address`).
"""

from __future__ import annotations

from typing import Literal

from modelport.errors import InvalidFormat, InvalidParameters

FetchErrorKind = Literal[
    "bad_url",  # not a URL we can read: scheme, userinfo, malformed host or port
    "forbidden_address",  # resolves to (or spells) an address that is not globally routable
    "unresolvable",  # the name does not resolve
    "too_many_redirects",
    "too_large",
    "too_slow",
    "origin_error",  # the origin answered with an error status, or the connection/TLS failed
]


class FetchError(InvalidParameters):
    kind: FetchErrorKind = "origin_error"

    def __init__(self, kind: FetchErrorKind, detail: str, *, status: int | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        # The origin's HTTP status, for `origin_error` answers.
        self.origin_status = status


class UrlRefused(FetchError):
    """Refused before any connection: the URL itself, its spelling or its resolved addresses."""


class UrlFormatRefused(UrlRefused, InvalidFormat):
    """Not an https URL, or a URL with userinfo: the spec's `Invalid format` message."""

    def __init__(self, detail: str = "url must be an https URL without userinfo") -> None:
        super().__init__("bad_url", detail)
