"""A `modelport serve` set up for asset tests: the local HTTPS origin allowed through, a team with the flag."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.https_origin import HttpsOrigin
from tests.support.ports import free_port as free_port  # re-exported: the tests import it from here
from tests.support.server import RunningServer, run_server

ASSETS = "/api/v1/media/providers/vendorA/assets"
ADMIN_TOKEN = "assets-test-admin-token-0123456789"


@contextmanager
def asset_server(
    data_dir: Path, origin: HttpsOrigin, *, database_url: str | None = None, **env: str
) -> Iterator[RunningServer]:
    port = free_port()
    extra = {
        "MODELPORT_PUBLIC_MEDIA_URL": f"http://127.0.0.1:{port}",
        "MODELPORT_NET__ALLOW_HOSTS": f"localhost:{origin.port},localhost:{origin.http_port}",
        "MODELPORT_NET__CA_BUNDLE": str(origin.ca_file),
        "MODELPORT_ASSETS__FETCH_TIME_LIMIT_SECONDS": "3",
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        **env,
    }
    if database_url is not None:  # PostgreSQL: at the head of the migrations already (`migrated_postgres_database`)
        extra["MODELPORT_DATABASE_URL"] = database_url
    with run_server(data_dir, "--media-port", str(port), env=extra) as running:
        yield running


def make_team(server: RunningServer, name: str, *, asset_service: bool) -> str:
    """A new team (zero balance) and its key, through the admin API."""

    def admin(method: str, path: str, body: dict[str, Any]) -> Any:
        got = httpx.request(
            method,
            f"{server.media_url}/admin/v1{path}",
            json=body,
            timeout=30,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )
        assert got.status_code == 200, got.text
        return got.json()["data"]

    admin("POST", "/teams", {"name": name})
    if asset_service:
        admin("PATCH", f"/teams/{name}", {"asset_service": True})
    key: str = admin("POST", f"/teams/{name}/keys", {})["key"]
    return key


class Assets:
    """The asset endpoints of one server, as one team."""

    def __init__(self, client: httpx.AsyncClient, server: RunningServer, key: str) -> None:
        self.client, self.server, self.key = client, server, key

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def register(
        self, body: Any = None, *, raw: bytes | None = None, provider: str = "vendorA"
    ) -> httpx.Response:
        url = f"{self.server.media_url}/api/v1/media/providers/{provider}/assets"
        if raw is not None:
            return await self.client.post(
                url, content=raw, headers={**self.headers, "Content-Type": "application/json"}
            )
        return await self.client.post(url, json=body, headers=self.headers)

    async def get(self, asset_id: str) -> httpx.Response:
        return await self.client.get(f"{self.server.media_url}{ASSETS}/{asset_id}", headers=self.headers)

    async def list(self, **params: Any) -> httpx.Response:
        return await self.client.get(f"{self.server.media_url}{ASSETS}", params=params, headers=self.headers)

    async def delete(self, asset_id: str) -> httpx.Response:
        return await self.client.delete(f"{self.server.media_url}{ASSETS}/{asset_id}", headers=self.headers)

    async def settle(self, asset_id: str, wait_seconds: float = 20) -> dict[str, Any]:
        """Poll until the asset leaves `processing`."""
        deadline = asyncio.get_running_loop().time() + wait_seconds
        while True:
            got = await self.get(asset_id)
            assert got.status_code == 200, got.text
            data: dict[str, Any] = got.json()["data"]
            if data["status"] != "processing" or asyncio.get_running_loop().time() > deadline:
                return data
            await asyncio.sleep(0.1)
