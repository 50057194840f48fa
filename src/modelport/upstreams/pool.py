"""One pooled client per upstream, created on first use and closed at shutdown."""

from __future__ import annotations

import os

import aiohttp

from modelport.catalog_spec import Deployment
from modelport.services import ServiceKey
from modelport.upstreams.kinds import endpoint_url
from modelport.upstreams.local_model import LocalModel
from modelport.upstreams.transport import HttpTransport, LocalTransport, Transport

UPSTREAMS: ServiceKey[UpstreamPool] = ServiceKey("upstreams")


class UpstreamPool:
    def __init__(self) -> None:
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        # One transport per (endpoint, timeouts): built once, not per request (~1% of a request's CPU).
        self._transports: dict[tuple[str, float, float, float], HttpTransport] = {}
        self._local: dict[str, LocalModel] = {}

    def transport(self, deployment: Deployment) -> Transport:
        if deployment.kind == "local":
            return LocalTransport(self.local_model(deployment))
        return self.http(deployment, endpoint_url(deployment))

    def local_model(self, deployment: Deployment) -> LocalModel:
        """The embedded model of a `local` deployment, one per model name, loaded on first use."""
        model = self._local.get(deployment.model)
        if model is None:
            model = self._local[deployment.model] = LocalModel(name=deployment.model)
        return model

    def http(self, deployment: Deployment, url: str) -> HttpTransport:
        """An HTTP transport to `url` (an endpoint of `deployment`'s upstream) over the origin's pool."""
        d = deployment
        timeouts = (url, d.timeout_seconds, d.read_timeout_seconds, d.connect_timeout_seconds)
        cached = self._transports.get(timeouts)
        if cached is not None and not cached.closed:
            return cached
        origin = url.split("/", 3)[:3]
        key = "/".join(origin)
        session = self._sessions.get(key)
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=60)
            session = aiohttp.ClientSession(connector=connector, auto_decompress=True, trust_env=False)
            self._sessions[key] = session
        if len(self._transports) > 10_000:  # catalog reloads can change URLs: never grow without bound
            self._transports.clear()
        transport = self._transports[timeouts] = HttpTransport(
            session,
            url,
            read_timeout=deployment.timeout_seconds,
            stream_read_timeout=deployment.read_timeout_seconds,
            connect_timeout=deployment.connect_timeout_seconds,
        )
        return transport

    @staticmethod
    def api_key(deployment: Deployment) -> str | None:
        return os.environ.get(deployment.api_key_env) if deployment.api_key_env else None

    async def aclose(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()
        self._transports.clear()
        for model in self._local.values():
            model.close()
        self._local.clear()
