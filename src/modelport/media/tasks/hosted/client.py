"""HTTP calls to a hosted media provider: its key, its timeout, 429 with `Retry-After` waited out, brief
retries of connection errors and 5xx, and every failure turned into one `ProviderFailed` with a task error
code. The provider's base URL is the operator's (from the catalog), so it is called directly; URLs the
provider hands back (outputs) go through the SSRF-safe fetcher instead (`runner.py`)."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from modelport.catalog_spec import HostedProvider
from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.net.retry_after import retry_after_seconds as parse_retry_after

log = logging.getLogger("modelport.media.hosted")

# Connection errors and 5xx: this many attempts in all, 1 s, 2 s, 4 s apart.
ATTEMPTS = 4
# The longest `Retry-After` honoured at once; a longer one is waited in pieces of this (the deadline still ends it).
MAX_RETRY_AFTER_SECONDS = 60.0
# Without `Retry-After`, a 429 is retried after 1 s, then 2, 4, ... up to this.
MAX_429_BACKOFF_SECONDS = 30.0
# How much of a provider's error answer goes into the task's error message.
ERROR_EXCERPT = 300
# The largest answer read from a provider (base64 images and speech bodies arrive whole).
MAX_ANSWER_BYTES = 200 * 1024 * 1024


class ProviderFailed(Exception):
    """The provider refused or failed the task: it ends `failed` with `code`, and is refunded."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError as exc:
            raise ProviderFailed(
                "upstream_error", f"the provider answered {self.status} with a body that is not JSON"
            ) from exc


def retry_after_seconds(value: str | None, attempt: int) -> float:
    """`Retry-After` as seconds (delta or HTTP date); without one, exponential from 1 s."""
    said = parse_retry_after(value)
    if said is not None:
        return min(said, MAX_RETRY_AFTER_SECONDS)
    return float(min(2**attempt, MAX_429_BACKOFF_SECONDS))


def _excerpt(body: bytes) -> str:
    text = body[: ERROR_EXCERPT * 16].decode("utf-8", "replace").strip().replace("\n", " ")
    return UPSTREAM_SECRETS.scrub(text)[:ERROR_EXCERPT]  # a provider may quote the key it was sent


class ProviderClient:
    def __init__(self, provider: HostedProvider, session: aiohttp.ClientSession) -> None:
        self.provider = provider
        self._session = session

    def url(self, path_or_url: str) -> str:
        return path_or_url if "://" in path_or_url else self.provider.base_url + path_or_url

    def _headers(self) -> dict[str, str]:
        headers = dict(self.provider.headers)
        if self.provider.api_key_env:
            key = os.environ.get(self.provider.api_key_env, "")
            if key:
                UPSTREAM_SECRETS.add([key])  # known before any answer can quote it
                scheme = self.provider.auth_scheme
                headers["Authorization"] = f"{scheme} {key}" if scheme else key
        return headers

    async def call(
        self, method: str, path_or_url: str, *, json: Any = None, form: aiohttp.FormData | None = None
    ) -> Answer:
        """One logical call: 429s waited out (as long as the task lives), connection errors and 5xx retried
        `ATTEMPTS` times; any other non-2xx raises ProviderFailed(`upstream_rejected`)."""
        url = self.url(path_or_url)
        failures = 0
        limited = 0
        timeout = aiohttp.ClientTimeout(total=self.provider.timeout_seconds, connect=10)
        while True:
            try:
                async with self._session.request(
                    method, url, json=json, data=form, headers=self._headers(), timeout=timeout, allow_redirects=False
                ) as response:
                    body = bytearray()
                    async for chunk in response.content.iter_chunked(1 << 16):
                        body += chunk
                        if len(body) > MAX_ANSWER_BYTES:
                            raise ProviderFailed(
                                "upstream_error",
                                f"provider {self.provider.name} sent an answer over {MAX_ANSWER_BYTES} bytes",
                            )
                    answer = Answer(response.status, response.headers.get("Content-Type", ""), bytes(body))
                    retry_after = response.headers.get("Retry-After")
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                failures += 1
                if failures >= ATTEMPTS:
                    raise ProviderFailed(
                        "upstream_unavailable",
                        f"provider {self.provider.name} could not be reached: {type(exc).__name__}",
                    ) from exc
                await asyncio.sleep(2 ** (failures - 1))
                continue
            if answer.status == 429:
                delay = retry_after_seconds(retry_after, limited)
                limited += 1
                log.info("provider %s: 429, retrying in %.1f s", self.provider.name, delay)
                await asyncio.sleep(delay)
                continue
            if answer.status >= 500:
                failures += 1
                if failures >= ATTEMPTS:
                    said = _excerpt(answer.body)
                    raise ProviderFailed(
                        "upstream_error", f"provider {self.provider.name} answered {answer.status}: {said}"
                    )
                await asyncio.sleep(2 ** (failures - 1))
                continue
            if not 200 <= answer.status < 300:
                raise ProviderFailed(
                    "upstream_rejected",
                    f"provider {self.provider.name} refused the task ({answer.status}): {_excerpt(answer.body)}",
                )
            return answer
