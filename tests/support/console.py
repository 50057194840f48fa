"""A console client for tests: an httpx client with the session cookie, and the page's CSRF token."""

from __future__ import annotations

import re

import httpx

_CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = _CSRF_RE.search(page)
    assert found is not None, "no CSRF field on the page"
    return found.group(1)


class ConsoleClient:
    def __init__(self, media_url: str, *, local_address: str | None = None) -> None:
        """`local_address`: the loopback address to connect from (the server counts sign-in failures per
        address; a test of those counts uses an address of its own, e.g. 127.0.0.2)."""
        self.base = media_url + "/console"
        transport = None if local_address is None else httpx.HTTPTransport(local_address=local_address)
        self.http = httpx.Client(base_url=self.base, timeout=30, follow_redirects=False, transport=transport)

    def close(self) -> None:
        self.http.close()

    def get(self, path: str, **kwargs: object) -> httpx.Response:
        return self.http.get(path, **kwargs)  # type: ignore[arg-type]

    def csrf(self, path: str = "/sign-in") -> str:
        return csrf_of(self.http.get(path).text)

    def post_form(self, path: str, data: dict[str, str], *, csrf_from: str | None = None) -> httpx.Response:
        token = self.csrf(csrf_from or path)
        return self.http.post(path, data={**data, "csrf_token": token})

    def sign_in(self, key: str) -> httpx.Response:
        return self.post_form("/sign-in", {"api_key": key})
