"""Checking a user URL without fetching it: scheme, userinfo, host spelling, port, the allow-list.

`check_url` parses with yarl, the parser aiohttp connects with, so the host we check is exactly the host
the connection uses (IDNA-encoded, lower-cased). It never resolves a name: that happens at connect time
in `resolver.CheckingResolver`, which checks every answer.
"""

from __future__ import annotations

import dataclasses

from yarl import URL

from modelport.net.addresses import BadHost, IPAddress, forbidden_reason, literal_address
from modelport.net.errors import UrlFormatRefused, UrlRefused

MAX_URL_CHARS = 8192  # a sanity bound for URLs we did not get from a length-checked field


@dataclasses.dataclass(frozen=True, slots=True)
class CheckedUrl:
    url: URL
    host: str  # as connected to: IDNA, lower case, no brackets
    port: int
    # True when `host:port` is on MODELPORT_NET__ALLOW_HOSTS: no address check, plain http allowed.
    allowed: bool
    # The address the host spells, when it is a literal (then nothing is resolved).
    address: IPAddress | None


def host_key(host: str, port: int) -> str:
    """The allow-list form of a URL's host and port: `host:port`, IPv6 in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_url(raw: str, allow_hosts: frozenset[str] = frozenset()) -> CheckedUrl:
    """Check a user URL without touching the network. Raises UrlRefused (a 400) saying why.

    Rules: `https` (or `http` for an allow-listed `host:port`); no userinfo; a host that is a DNS name
    or an address in any spelling, and then a globally routable one unless allow-listed.
    """
    if len(raw) > MAX_URL_CHARS:
        raise UrlRefused("bad_url", f"url is longer than {MAX_URL_CHARS} characters")
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise UrlRefused("bad_url", "url contains whitespace or control characters")
    try:
        url = URL(raw, encoded=False)
        raw_host = url.raw_host
        port = url.port
    except (ValueError, UnicodeError) as exc:
        # Not an absolute URL we can parse: the interface's `Invalid format` (media host, Errors).
        raise UrlFormatRefused() from exc
    scheme = url.scheme.lower()
    if scheme not in ("http", "https"):
        raise UrlFormatRefused()
    if url.raw_user is not None or url.raw_password is not None or "@" in _raw_authority(raw):
        raise UrlFormatRefused()
    if not raw_host or port is None:
        raise UrlFormatRefused()  # `https:///x.png`, `https:x.png`: not an absolute https URL with a host
    host = raw_host.lower()
    if host.endswith(".") and ":" not in host:
        host = host[:-1]  # `example.com.` is `example.com` (aiohttp resolves every name in this form)
    if "%" in host or "\\" in host:
        raise UrlFormatRefused()  # no host name has these
    allowed = host_key(host, port) in allow_hosts
    if scheme != "https" and not allowed:
        raise UrlFormatRefused()
    try:
        address = literal_address(host)
    except BadHost as exc:
        raise UrlRefused("bad_url", f"url host is not a valid address: {exc}") from exc
    if address is not None and not allowed:
        reason = forbidden_reason(address)
        if reason is not None:
            raise UrlRefused("forbidden_address", f"url points to {reason}, which the server does not fetch")
    return CheckedUrl(url=url, host=host, port=port, allowed=allowed, address=address)


def _raw_authority(raw: str) -> str:
    """The authority as written (yarl drops an empty userinfo such as `https://@host/`)."""
    rest = raw.split("://", 1)[1] if "://" in raw else raw
    for stop in "/?#":
        rest = rest.split(stop, 1)[0]
    return rest
