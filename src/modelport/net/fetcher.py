"""`SafeFetcher`: the one way the server reads or calls a URL a user gave it.

Three operations, each with the same rules (see `modelport.net`):

- `check(url)`: validate without any network access (e.g. `X-Webhook-URL` at task creation).
- `fetch_to_file(url, max_bytes=, time_limit=)`: GET into a temporary file, following at most 3 redirects
  (each re-checked from the start), refusing bodies over `max_bytes` and fetches over `time_limit` seconds
  in total. One of our own `download_url`s is read from storage instead, with no network fetch.
- `send(url, body=, headers=, time_limit=)`: one request (POST by default) that follows no redirect and
  reads at most `max_response_bytes` of the answer (e.g. a webhook delivery).

All refusals and failures raise `FetchError` (a 400 `Invalid parameters: ...`) with a `kind`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Protocol

import aiohttp
from yarl import URL

from modelport.net.errors import FetchError, UrlFormatRefused, UrlRefused
from modelport.net.resolver import CheckingResolver
from modelport.net.urls import CheckedUrl, check_url
from modelport.settings import NetSettings

log = logging.getLogger("modelport.net")
# How long a creation-time check waits for DNS (the connect-time check has no such shortcut).
RESOLVE_AT_CHECK_SECONDS = 5.0

MAX_REDIRECTS = 3
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


class OwnFile(Protocol):
    """A file behind one of our own download URLs, read from storage."""

    @property
    def mime_type(self) -> str: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def chunks(self) -> AsyncIterator[bytes]: ...


class OwnUrls(Protocol):
    """Recognises and opens our own signed `download_url`s (wired in by the composition root)."""

    def is_own(self, url: str) -> bool:
        """True when `url` points at our download route (signature not checked yet)."""
        ...

    async def open(self, url: str) -> OwnFile:
        """The file's bytes; raises a ServiceError (400) for a bad signature or an expired file."""
        ...


@dataclasses.dataclass(slots=True)
class FetchedFile:
    """A fetched body in a temporary file the caller owns: call `remove()` (or use `with`) when done."""

    path: Path
    size_bytes: int
    content_type: str | None  # as the origin declared it (or our stored MIME type): a hint, never trusted
    final_url: str
    own: bool  # read from our own storage, not the network

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def __enter__(self) -> FetchedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


@dataclasses.dataclass(frozen=True, slots=True)
class SentResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes  # at most `max_response_bytes`


class SafeFetcher:
    def __init__(self, settings: NetSettings, *, own_urls: OwnUrls | None = None, temp_dir: Path | None = None) -> None:
        self.settings = settings
        self.allow_hosts = settings.allowed_pairs()
        self._own = own_urls
        self._temp_dir = temp_dir
        self._ssl = ssl.create_default_context()
        if settings.ca_bundle is not None:
            self._ssl.load_verify_locations(cafile=str(settings.ca_bundle))
        self._session: aiohttp.ClientSession | None = None

    def describe(self) -> dict[str, object]:
        """What start-up logs: the allow-list and the extra CA file."""
        return {
            "allow_hosts": sorted(self.allow_hosts),
            "ca_bundle": str(self.settings.ca_bundle) if self.settings.ca_bundle else None,
        }

    def is_own(self, url: str) -> bool:
        return self._own is not None and self._own.is_own(url)

    def check(self, url: str) -> CheckedUrl:
        """Validate `url` without network access; raises UrlRefused (400). Our own URLs are not accepted
        here: call `is_own` first where they are welcome."""
        return check_url(url, self.allow_hosts)

    async def check_resolved(self, url: str, *, time_limit: float = RESOLVE_AT_CHECK_SECONDS) -> CheckedUrl:
        """`check`, then the host resolved once and refused (UrlRefused, 400) if any answer is not globally
        routable: where a URL is only stored for later (webhooks, task inputs), `localhost`, `LOCALHOST.`
        and names that resolve to private addresses are refused when the client gives them. The
        connect-time check stays (a name may be rebound in between). A name that does not resolve now, or
        not within `time_limit`, passes here: DNS may be down for a moment, and the use will say."""
        checked = self.check(url)
        if checked.allowed or checked.address is not None:
            return checked  # allow-listed, or a literal address `check` has judged already
        try:
            async with asyncio.timeout(time_limit):
                await CheckingResolver(self.allow_hosts).resolve(checked.host, checked.port, socket.AF_UNSPEC)
        except UrlRefused as exc:
            if exc.kind != "unresolvable":
                raise
        except TimeoutError:
            pass
        return checked

    # -- fetching ---------------------------------------------------------------------------------

    async def fetch_to_file(self, url: str, *, max_bytes: int, time_limit: float | None = None) -> FetchedFile:
        """GET `url` into a temporary file; raises FetchError saying why it could not."""
        limit = time_limit if time_limit is not None else self.settings.default_timeout_seconds
        try:
            async with asyncio.timeout(limit):
                return await self._fetch(url, max_bytes)
        except TimeoutError:
            raise FetchError("too_slow", f"url did not finish downloading within {limit:g} seconds") from None

    async def _fetch(self, url: str, max_bytes: int) -> FetchedFile:
        current = url
        for hop in range(MAX_REDIRECTS + 1):
            if self.is_own(current):
                assert self._own is not None
                return await self._read_own(current, max_bytes)
            checked = self.check(current) if hop == 0 else self._check_redirect(current)
            async with self._session_().get(checked.url, allow_redirects=False, headers={"Accept": "*/*"}) as resp:
                if resp.status in _REDIRECTS and "Location" in resp.headers:
                    current = str(_join(checked.url, resp.headers["Location"]))
                    continue
                if resp.status >= 400 or resp.status in _REDIRECTS:
                    raise FetchError("origin_error", f"url answered HTTP {resp.status}", status=resp.status)
                declared = resp.content_length
                if declared is not None and declared > max_bytes:
                    raise FetchError("too_large", f"url is larger than the {max_bytes} byte limit")
                return await self._spool(_response_chunks(resp), max_bytes, resp.content_type, str(checked.url))
        raise FetchError("too_many_redirects", f"url redirected more than {MAX_REDIRECTS} times")

    def _check_redirect(self, location: str) -> CheckedUrl:
        """A redirect target, checked like the first URL; refusals say it was the redirect."""
        try:
            return self.check(location)
        except UrlFormatRefused:
            raise UrlRefused("bad_url", "url redirected to a URL that is not https or has userinfo") from None
        except UrlRefused as exc:
            raise UrlRefused(exc.kind, "url redirected: " + exc.detail.removeprefix("url ")) from None

    async def _read_own(self, url: str, max_bytes: int) -> FetchedFile:
        assert self._own is not None
        own = await self._own.open(url)
        if own.size_bytes > max_bytes:
            aclose = getattr(own.chunks, "aclose", None)
            if aclose is not None:
                await aclose()
            raise FetchError("too_large", f"url is larger than the {max_bytes} byte limit")
        fetched = await self._spool(own.chunks, max_bytes, own.mime_type, url)
        fetched.own = True
        return fetched

    async def _spool(
        self, chunks: AsyncIterator[bytes], max_bytes: int, content_type: str | None, final_url: str
    ) -> FetchedFile:
        if self._temp_dir is not None:
            self._temp_dir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="fetch-", dir=self._temp_dir)
        path = Path(name)
        size = 0
        try:
            with os.fdopen(fd, "wb") as fh:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > max_bytes:
                        raise FetchError("too_large", f"url is larger than the {max_bytes} byte limit")
                    fh.write(chunk)
        except aiohttp.ClientError as exc:
            _remove(path)
            raise FetchError("origin_error", f"url could not be read: {_describe(exc)}") from exc
        except BaseException:
            _remove(path)
            raise
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        return FetchedFile(path=path, size_bytes=size, content_type=content_type, final_url=final_url, own=False)

    # -- sending ----------------------------------------------------------------------------------

    async def send(
        self,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        method: str = "POST",
        time_limit: float = 10.0,
        max_response_bytes: int = 64 * 1024,
    ) -> SentResponse:
        """One request to a checked, pinned address; redirects are answers, not followed.

        Raises FetchError: `bad_url`/`forbidden_address`/`unresolvable` before any connection,
        `too_slow` past `time_limit`, `origin_error` when the connection or TLS fails. Any HTTP status is
        returned, not raised: the caller decides what counts as delivered.
        """
        checked = self.check(url)
        try:
            async with asyncio.timeout(time_limit):
                async with self._session_().request(
                    method, checked.url, data=body, headers=dict(headers or {}), allow_redirects=False
                ) as resp:
                    data = bytearray()
                    while len(data) < max_response_bytes:
                        chunk = await resp.content.read(max_response_bytes - len(data))
                        if not chunk:
                            break
                        data += chunk
                    return SentResponse(status=resp.status, headers=dict(resp.headers), body=bytes(data))
        except TimeoutError:
            raise FetchError("too_slow", f"url did not answer within {time_limit:g} seconds") from None
        except aiohttp.ClientError as exc:
            raise FetchError("origin_error", f"url could not be read: {_describe(exc)}") from exc

    # -- plumbing ---------------------------------------------------------------------------------

    def _session_(self) -> _GuardedSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                resolver=CheckingResolver(self.allow_hosts),
                use_dns_cache=False,  # every connection is resolved and checked afresh
                ssl=self._ssl,
                limit=100,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                trust_env=False,  # never through an environment proxy: we connect to the checked address
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.settings.connect_timeout_seconds),
                headers={"User-Agent": "modelport-fetcher/1"},
            )
        return _GuardedSession(self._session)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class _GuardedSession:
    """Turns aiohttp's connection errors into FetchError; lets our own refusals through unchanged."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    def get(self, url: URL, **kwargs: object) -> _GuardedRequest:
        return _GuardedRequest(self._session, "GET", url, kwargs)

    def request(self, method: str, url: URL, **kwargs: object) -> _GuardedRequest:
        return _GuardedRequest(self._session, method, url, kwargs)


class _GuardedRequest:
    def __init__(self, session: aiohttp.ClientSession, method: str, url: URL, kwargs: dict[str, object]) -> None:
        self._session, self._method, self._url, self._kwargs = session, method, url, kwargs
        self._resp: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> aiohttp.ClientResponse:
        try:
            self._resp = await self._session.request(self._method, self._url, **self._kwargs)  # type: ignore[arg-type]
        except UrlRefused:
            raise
        except (aiohttp.ClientError, ssl.SSLError, OSError) as exc:
            raise FetchError("origin_error", f"url could not be fetched: {_describe(exc)}") from exc
        return self._resp

    async def __aexit__(self, *exc: object) -> None:
        if self._resp is not None:
            self._resp.release()


async def _response_chunks(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    async for chunk in resp.content.iter_chunked(_CHUNK):
        yield chunk


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _join(base: URL, location: str) -> URL:
    try:
        return base.join(URL(location))
    except ValueError as exc:
        raise FetchError("bad_url", f"url redirected to an invalid location ({exc})") from exc


def _describe(exc: BaseException) -> str:
    cause = exc
    while isinstance(cause, aiohttp.ClientConnectorError) and cause.__cause__ is not None:
        cause = cause.__cause__
    if isinstance(cause, ssl.SSLCertVerificationError | aiohttp.ClientConnectorCertificateError):
        return "its TLS certificate is not trusted"
    if isinstance(cause, aiohttp.ClientConnectorError):
        return "the connection failed"
    if isinstance(cause, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return "the connection broke off"
    return type(cause).__name__
