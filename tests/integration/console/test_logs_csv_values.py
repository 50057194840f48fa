"""The team console's `logs.csv` carries the right values, not only the columns, through a real `modelport
serve` over scripted fake upstreams (issue 37): the response cache (`cache`: miss, then hit for the same
request again), routing (`served_model`: empty when a second deployment of the requested model answered
after the first failed, the fallback model's id when the model's deployments failed and a fallback
answered) and the stored-response chain (`previous_response_id` of a Responses turn that continues one)."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.console import ConsoleClient
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer, run_server

ADMIN = "logs-csv-admin-token-0123456789-abcdef"
PRICES = '{ input = "1", output = "2" }'
USAGE = Usage(input_tokens=12, output_tokens=4)


def _catalog(healthy: str, flaky: str) -> str:
    return f"""
[[text_models]]
id = "csv/chat"
prices = {PRICES}
deployments = [{{ name = "only", kind = "openai_chat", base_url = "{healthy}/v1", model = "up-chat" }}]

[[text_models]]
id = "csv/failover"
prices = {PRICES}
deployments = [
  {{ name = "a", kind = "openai_chat", base_url = "{flaky}/v1", model = "up-a" }},
  {{ name = "b", kind = "openai_chat", base_url = "{healthy}/v1", model = "up-b", weight = 0 }},
]

[[text_models]]
id = "csv/fb-main"
prices = {PRICES}
fallbacks = ["csv/fb-backup"]
deployments = [{{ name = "a", kind = "openai_chat", base_url = "{flaky}/v1", model = "up-main" }}]

[[text_models]]
id = "csv/fb-backup"
prices = {PRICES}
deployments = [{{ name = "b", kind = "openai_chat", base_url = "{healthy}/v1", model = "up-backup" }}]
"""


@dataclass
class Setup:
    server: RunningServer
    healthy: FakeUpstream
    flaky: FakeUpstream
    key: str

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        answer = httpx.post(
            self.server.text_url + path, json=body, headers={"Authorization": f"Bearer {self.key}"}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        return answer

    def chat(self, model: str, prompt: str) -> httpx.Response:
        return self.post("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": prompt}]})


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp: Path = tmp_path_factory.mktemp("logs-csv")
    with (
        FakeUpstream(Reply.text("served by b", usage=USAGE)) as healthy,
        FakeUpstream(Reply.error(500, "a is down")) as flaky,
    ):
        (tmp / "catalog.toml").write_text(_catalog(healthy.base_url, flaky.base_url))
        with run_server(
            tmp,
            MODELPORT_CATALOG=str(tmp / "catalog.toml"),
            MODELPORT_ADMIN_TOKEN=ADMIN,
            MODELPORT_ROUTING__FAILURES_BEFORE_COOLDOWN="1000",  # deployment a stays in the rotation
        ) as server:

            def admin(method: str, path: str, **kw: Any) -> httpx.Response:
                headers = {"Authorization": f"Bearer {ADMIN}"}
                answer = httpx.request(method, server.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kw)
                assert answer.status_code == 200, answer.text
                return answer

            admin("POST", "/teams", json={"name": "csv-team"})
            admin("POST", "/teams/csv-team/topups", json={"amount_usd": "10"})
            admin("PATCH", "/teams/csv-team", json={"cache": "team"})
            key = admin("POST", "/teams/csv-team/keys", json={"name": "csv"}).json()["data"]["key"]
            yield Setup(server, healthy, flaky, str(key))


def _export(setup: Setup, wanted: set[str]) -> dict[str, dict[str, str]]:
    """The CSV's rows by request id, once every `wanted` id is in it (log rows are written in batches)."""
    console = ConsoleClient(setup.server.media_url)
    try:
        signed = console.sign_in(setup.key)
        assert signed.status_code == 303, signed.text
        deadline = time.monotonic() + 30
        while True:
            exported = console.get("/logs.csv")
            assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
            rows = {r["request_id"]: r for r in csv.DictReader(io.StringIO(exported.text))}
            if wanted <= set(rows):
                return rows
            assert time.monotonic() < deadline, sorted(wanted - set(rows))
            time.sleep(0.3)
    finally:
        console.close()


def _columns(row: dict[str, str]) -> tuple[str, str, str, str, str]:
    return (row["status"], row["model"], row["cache"], row["served_model"], row["previous_response_id"])


def test_the_export_has_each_rows_cache_routing_and_chain_values(setup: Setup) -> None:
    # The response cache: the first request is a miss; the same request again is answered from the cache
    # (the entry is written after the answer: asked again until it is there).
    miss = setup.chat("csv/chat", "cache me")
    assert miss.headers["x-modelport-cache"] == "miss"
    deadline = time.monotonic() + 15
    while (hit := setup.chat("csv/chat", "cache me")).headers["x-modelport-cache"] != "hit":
        assert time.monotonic() < deadline, hit.headers
        time.sleep(0.2)
    assert hit.json()["choices"][0]["message"]["content"] == "served by b"

    # Failover: deployment a answers 500, b (same model) answers.
    flaky_before = setup.flaky.call_count()
    calls = setup.healthy.call_count()
    failover = setup.chat("csv/failover", "fail over")
    assert failover.json()["choices"][0]["message"]["content"] == "served by b"
    assert setup.flaky.call_count() == flaky_before + 1 and setup.healthy.call_count() == calls + 1

    # Fallback model: csv/fb-main's only deployment fails, csv/fb-backup answers.
    fallback = setup.chat("csv/fb-main", "fall back")
    assert fallback.json()["model"] == "csv/fb-backup"

    # A stored-response chain: the second turn continues the first by previous_response_id.
    first = setup.post("/v1/responses", {"model": "csv/chat", "input": "turn one"})
    first_id = first.json()["id"]
    second = setup.post("/v1/responses", {"model": "csv/chat", "input": "turn two", "previous_response_id": first_id})
    assert second.json()["id"] != first_id

    ids = {
        "miss": miss.headers["x-request-id"],
        "hit": hit.headers["x-request-id"],
        "failover": failover.headers["x-request-id"],
        "fallback": fallback.headers["x-request-id"],
        "first": first.headers["x-request-id"],
        "second": second.headers["x-request-id"],
    }
    rows = _export(setup, set(ids.values()))
    got = {name: _columns(rows[request_id]) for name, request_id in ids.items()}
    assert got == {
        "miss": ("success", "csv/chat", "miss", "", ""),
        "hit": ("success", "csv/chat", "hit", "", ""),
        "failover": ("success", "csv/failover", "miss", "", ""),
        "fallback": ("success", "csv/fb-main", "miss", "csv/fb-backup", ""),
        # A chained turn is keyed by the whole conversation it resolves to (docs/api/cache.md): a miss too.
        "first": ("success", "csv/chat", "miss", "", ""),
        "second": ("success", "csv/chat", "miss", "", first_id),
    }, got
    # A hit is billed as the cache bills it, and its usage is what was served.
    assert rows[ids["hit"]]["prompt_tokens"] == "12" and rows[ids["hit"]]["completion_tokens"] == "4"
