"""A `modelport serve` with a priced text model on a fake upstream, an admin token and teams to sign in as."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "console-pages-admin-token-0123456789"
MODEL = "fake/priced"


@dataclass
class Team:
    name: str
    key: str
    key_id: str


class ConsoleServer:
    def __init__(self, server: RunningServer, upstream: FakeUpstream) -> None:
        self.server = server
        self.upstream = upstream
        self.media_url = server.media_url
        self.text_url = server.text_url

    def admin(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        return httpx.request(method, self.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kwargs)

    def team(self, name: str, *, topup_usd: str = "20", retain_logs: bool = True) -> Team:
        assert self.admin("POST", "/teams", json={"name": name}).status_code == 200
        if topup_usd:
            assert self.admin("POST", f"/teams/{name}/topups", json={"amount_usd": topup_usd}).status_code == 200
        if retain_logs:
            assert self.admin("PATCH", f"/teams/{name}", json={"log_retention": True}).status_code == 200
        # The team's first key is its admin (the console's key pages need one); members are tested apart.
        created = self.admin("POST", f"/teams/{name}/keys", json={"name": "first", "role": "admin"}).json()["data"]
        return Team(name, created["key"], created["id"])

    def chat(self, key: str, text: str = "hello", user: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"}
        if user:
            headers["X-Svc-User-Id"] = user
        body = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
        return httpx.post(self.text_url + "/v1/chat/completions", json=body, headers=headers, timeout=60)


def write_catalog(tmp: Path, upstream: FakeUpstream) -> Path:
    """The built-in catalog (the embedded models, media ones included) plus a priced model on the fake."""
    catalog = tmp / "catalog.toml"
    default = (resources.files("modelport") / "default_catalog.toml").read_text("utf-8")
    catalog.write_text(
        default
        + f"""
[[text_models]]
id = "{MODEL}"
prices = {{ input = "1000", output = "2000" }}
max_output_tokens = 100
deployments = [{{ kind = "openai_chat", base_url = "{upstream.base_url}/v1", model = "m" }}]
"""
    )
    return catalog


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    tmp = tmp_path_factory.mktemp("console-pages")
    with FakeUpstream() as upstream:
        env = {
            "MODELPORT_CATALOG": str(write_catalog(tmp, upstream)),
            "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
            "MODELPORT_CONSOLE__SIGN_IN_PER_MINUTE": "1000",
            "MODELPORT_ADMIN_FAILURES_PER_MINUTE": "1000",  # fuzzers send wrong tokens from this address
        }
        with run_server(tmp, env=env) as server:
            yield ConsoleServer(server, upstream)
