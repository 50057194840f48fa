"""A real `modelport serve` with the response cache, on SQLite (entries in the database) or on PostgreSQL
and Redis (entries in Redis), over the scriptable fake upstream of every kind; the official SDKs call it."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
import redis

from tests.integration.gateway.conftest import ADMIN_TOKEN, CONFIG_TOML, catalog_toml
from tests.support.databases import migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer, run_server

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# The size bound: small enough for the eviction test to pass it with a few large answers.
MAX_MB = "0.05"
HIT_PRICE_SHARE = "0.5"


@dataclass
class Cached:
    server: RunningServer
    upstream: FakeUpstream
    backend: str
    clients: dict[tuple[str, str], Any] = field(default_factory=dict)

    def admin(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return httpx.request(
            method,
            self.server.media_url + "/admin/v1" + path,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30,
            **kw,
        )

    def team(self, cache: str = "team", *, tool_calls: bool = False, role: str = "member") -> tuple[str, str]:
        """A new team with its cache set, topped up; its name and a key of `role`."""
        name = "t" + secrets.token_hex(5)
        assert self.admin("POST", "/teams", json={"name": name}).status_code == 200
        assert self.admin("POST", f"/teams/{name}/topups", json={"amount_usd": "10"}).status_code == 200
        patched = self.admin("PATCH", f"/teams/{name}", json={"cache": cache, "cache_tool_calls": tool_calls})
        assert patched.status_code == 200, patched.text
        return name, self.key(name, role)

    def key(self, team: str, role: str = "member") -> str:
        created = self.admin("POST", f"/teams/{team}/keys", json={"role": role})
        assert created.status_code == 200, created.text
        key: str = created.json()["data"]["key"]
        return key

    def openai(self, key: str) -> openai.OpenAI:
        client = self.clients.get(("openai", key))
        if client is None:
            client = openai.OpenAI(base_url=self.server.text_url + "/v1", api_key=key, max_retries=0)
            self.clients["openai", key] = client
        assert isinstance(client, openai.OpenAI)
        return client

    def anthropic(self, key: str) -> anthropic.Anthropic:
        client = self.clients.get(("anthropic", key))
        if client is None:
            client = anthropic.Anthropic(base_url=self.server.text_url, api_key=key, max_retries=0)
            self.clients["anthropic", key] = client
        assert isinstance(client, anthropic.Anthropic)
        return client

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


@pytest.fixture(scope="package", params=["sqlite", "postgres+redis"])
def cached_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cached]:
    backend: str = request.param
    tmp = tmp_path_factory.mktemp("response-cache")
    env = {"MODELPORT_CACHE__MAX_MB": MAX_MB, "MODELPORT_CACHE__HIT_PRICE_SHARE": HIT_PRICE_SHARE}
    loop = asyncio.new_event_loop()
    database = migrated_postgres_database() if backend != "sqlite" else None
    try:
        if database is not None:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()  # fail loudly if Redis is missing
            env["MODELPORT_DATABASE_URL"] = loop.run_until_complete(database.__aenter__())
            env["MODELPORT_REDIS_URL"] = REDIS_URL
            env["MODELPORT_RATELIMIT_PREFIX"] = "mp-cache-" + secrets.token_hex(4)
        with FakeUpstream() as upstream:
            (tmp / "catalog.toml").write_text(catalog_toml(upstream.base_url))
            (tmp / "config.toml").write_text(CONFIG_TOML)
            with run_server(
                Path(tmp),
                MODELPORT_CATALOG=str(tmp / "catalog.toml"),
                MODELPORT_CONFIG=str(tmp / "config.toml"),
                MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
                FAKE_UPSTREAM_KEY="sk-upstream-secret",
                env=env,
            ) as server:
                cached = Cached(server, upstream, backend)
                try:
                    yield cached
                finally:
                    cached.close()
    finally:
        if database is not None:
            loop.run_until_complete(database.__aexit__(None, None, None))
            _forget_redis_keys(env["MODELPORT_RATELIMIT_PREFIX"])
        loop.close()


def _forget_redis_keys(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        for name in client.scan_iter(match=prefix + ":*"):
            client.delete(name)
    finally:
        client.close()


@pytest.fixture
def srv(cached_server: Cached) -> Cached:
    cached_server.upstream.reset()
    return cached_server
