"""The SSRF-safe fetcher: every server-side read or call of a URL a user gave us goes through here.

Use one `SafeFetcher` per process (the composition root builds it from `settings.net` and wires in our
own download URLs); nothing else opens outbound connections to user URLs.

    fetcher.check(url)                                   # no network: 400 UrlRefused if not acceptable
    with await fetcher.fetch_to_file(url, max_bytes=N, time_limit=S) as fetched:   # GET into a temp file
        fetched.path, fetched.size_bytes, fetched.content_type, fetched.own
    sent = await fetcher.send(url, body=b"...", headers={...}, time_limit=10)     # e.g. a webhook POST
    sent.status, sent.headers, sent.body

Rules, for every hop: `https` only (plain `http` only for allow-listed hosts and our own download URLs);
no userinfo; a host spelled as an address in any notation (`2130706433`, `0x7f.1`, `0177.0.0.1`,
`127.1`, IPv4-mapped/compatible IPv6, ...) is read as that address; a name is resolved once and refused
if ANY answer is not globally routable (`ipaddress.is_global`, plus 0.0.0.0/8, 100.64.0.0/10,
192.0.0.0/24, 198.18.0.0/15, multicast, 64:ff9b::/96, 2002::/16); the connection goes to the checked
addresses with the URL's Host header and TLS SNI (`resolver.CheckingResolver`). `fetch_to_file` follows
at most 3 redirects, each checked from the start; `send` follows none. No environment proxy is used.

`MODELPORT_NET__ALLOW_HOSTS` (`host:port,...`) lets exactly those literal host:port pairs skip the
address check and use plain http (tests, private deployments); `MODELPORT_NET__CA_BUNDLE` adds a CA.

Errors: `FetchError` (400 `Invalid parameters: url ...`) with `kind` in bad_url, forbidden_address,
unresolvable, too_many_redirects, too_large, too_slow, origin_error; `UrlRefused` (a FetchError) means
no connection was made; `UrlFormatRefused` carries the spec's `Invalid format` message.
"""

from modelport.net.errors import FetchError, FetchErrorKind, UrlFormatRefused, UrlRefused
from modelport.net.fetcher import FetchedFile, OwnFile, OwnUrls, SafeFetcher, SentResponse
from modelport.net.urls import CheckedUrl
from modelport.settings import NetSettings

__all__ = [
    "CheckedUrl",
    "FetchError",
    "FetchErrorKind",
    "FetchedFile",
    "NetSettings",
    "OwnFile",
    "OwnUrls",
    "SafeFetcher",
    "SentResponse",
    "UrlFormatRefused",
    "UrlRefused",
]
