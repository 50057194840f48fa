"""A real `modelport serve` whose catalog points at a scriptable fake upstream of every kind."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "gateway-admin-token-0123456789-abcdef"
# USD per million tokens = micro-USD per token: 12 input + 4 output tokens cost 12*1 + 4*2 = 20 micro-USD.
PRICES = '{ input = "1", output = "2", cache_read = "0.5", cache_write = "1.25" }'

# model id → upstream kind; each has one deployment on the fake.
KEY_ENV = 'api_key_env = "FAKE_UPSTREAM_KEY"'
SINGLE = {
    "fake/chat": "openai_chat",
    "fake/responses": "openai_responses",
    "fake/claude": "anthropic",
    "fake/compat": "openai_compatible",
}


def catalog_toml(base: str) -> str:
    def base_for(kind: str) -> str:
        return base if kind == "anthropic" else base + "/v1"

    out = []
    for model_id, kind in SINGLE.items():
        out.append(f'''[[text_models]]
id = "{model_id}"
prices = {PRICES}
context_window = 200000
max_output_tokens = 32000
deployments = [{{ kind = "{kind}", base_url = "{base_for(kind)}", model = "up-{kind}", {KEY_ENV} }}]
''')
    out.append(f'''[[text_models]]
id = "fake/fallback"
prices = {PRICES}
deployments = [
  {{ name = "a", kind = "openai_chat", base_url = "{base}/v1", model = "first" }},
  {{ name = "b", kind = "anthropic", base_url = "{base}", model = "second" }},
]
''')
    out.append("""[[text_models]]
id = "local/smollm2-135m-instruct"
prices = { input = "0.01", output = "0.02" }
deployments = [{ kind = "local", model = "smollm2-135m-instruct" }]
""")
    return "\n".join(out)


CONFIG_TOML = """
[[tiers]]
name = "free"
qualifying_topup_usd = "0"
inference_rpm = 100000
query_rpm = 100000
concurrent_media_tasks = 2
concurrent_requests = 64

[[tiers]]
name = "tiny"
qualifying_topup_usd = "1000000"
inference_rpm = 3
query_rpm = 2
concurrent_media_tasks = 1
concurrent_requests = 1
"""


@dataclass
class Gateway:
    server: RunningServer
    upstream: FakeUpstream
    key: str

    @property
    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.server.text_url + "/v1", api_key=self.key, max_retries=0)

    @property
    def anthropic(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.server.text_url, api_key=self.key, max_retries=0)

    def admin(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return httpx.request(
            method, self.server.media_url + "/admin/v1" + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, **kw
        )

    def new_team(self, name: str, usd: str | None = "10") -> str:
        assert self.admin("POST", "/teams", json={"name": name}).status_code == 200
        if usd is not None:
            assert self.admin("POST", f"/teams/{name}/topups", json={"amount_usd": usd}).status_code == 200
        key: str = self.admin("POST", f"/teams/{name}/keys", json={}).json()["data"]["key"]
        return key

    def balance(self, key: str) -> dict[str, object]:
        data: dict[str, object] = httpx.get(
            self.server.media_url + "/api/v1/team/balance", headers={"Authorization": f"Bearer {key}"}
        ).json()["data"]
        return data


@pytest.fixture(scope="package")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("gateway")
    with FakeUpstream() as upstream:
        catalog = Path(tmp / "catalog.toml")
        catalog.write_text(catalog_toml(upstream.base_url))
        config = Path(tmp / "config.toml")
        config.write_text(CONFIG_TOML)
        with run_server(
            tmp,
            MODELPORT_CATALOG=str(catalog),
            MODELPORT_CONFIG=str(config),
            MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
            MODELPORT_DEMO_BALANCE_USD="50",
            FAKE_UPSTREAM_KEY="sk-upstream-secret",
        ) as server:
            assert server.demo_key is not None
            yield Gateway(server, upstream, server.demo_key)


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    gateway.upstream.reset()
    return gateway
