"""Shared set-up for the money and limits tests: a fake upstream, a catalog, tiers, and servers on a
chosen database backend."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer, run_server, server_env

ADMIN_TOKEN = "money-admin-token-0123456789-abcdef"

CONFIG_TOML = """
[[tiers]]
name = "free"
qualifying_topup_usd = "0"
inference_rpm = 100000
query_rpm = 100000
concurrent_media_tasks = 2
concurrent_requests = 1000

[[tiers]]
name = "tiny"
qualifying_topup_usd = "1000000"
inference_rpm = 5
query_rpm = 5
concurrent_media_tasks = 1
concurrent_requests = 1000
"""


def write_config(tmp: Path, upstream: FakeUpstream) -> dict[str, str]:
    catalog = tmp / "catalog.toml"
    catalog.write_text(f"""
[[text_models]]
id = "fake/priced"
prices = {{ input = "1", output = "2" }}
max_output_tokens = 100
deployments = [{{ kind = "openai_chat", base_url = "{upstream.base_url}/v1", model = "m" }}]
""")
    config = tmp / "config.toml"
    config.write_text(CONFIG_TOML)
    return {
        "MODELPORT_CATALOG": str(catalog),
        "MODELPORT_CONFIG": str(config),
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        "MODELPORT_DEMO_BALANCE_USD": "0",
    }


def migrate(tmp: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "modelport", "migrate"],
        env=server_env(tmp, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


@contextmanager
def server(tmp: Path, env: dict[str, str], *args: str) -> Iterator[RunningServer]:
    with run_server(tmp, *args, env=env) as running:
        yield running


def admin(server: RunningServer, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(
        method,
        server.media_url + "/admin/v1" + path,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=30,
        **kw,
    )


def team_with_key(server: RunningServer, name: str, usd: str | None) -> str:
    assert admin(server, "POST", "/teams", json={"name": name}).status_code == 200
    if usd is not None:
        assert admin(server, "POST", f"/teams/{name}/topups", json={"amount_usd": usd}).status_code == 200
    key: str = admin(server, "POST", f"/teams/{name}/keys", json={}).json()["data"]["key"]
    return key
