"""Prometheus `/metrics` of a 2-worker `modelport serve` after mixed traffic (issue 15).

The endpoint is read with prometheus-client's own text-format parser; every counter must add up to the
requests this test sent, whichever worker served them.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.gateway.conftest import CONFIG_TOML, catalog_toml
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer, run_server

Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(url: str) -> Samples:
    r = httpx.get(url, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out: Samples = defaultdict(list)
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            out[sample.name].append((dict(sample.labels), sample.value))
    return out


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(v for lab, v in samples.get(name, []) if all(lab.get(k) == want for k, want in labels.items()))


def metrics_url(server: RunningServer) -> str:
    line = next(line for line in server.banner if line.startswith("metrics:"))
    return line.split()[1]


def test_counters_add_up_across_two_workers(tmp_path: Path) -> None:
    # A stale file from an earlier run: the supervisor must wipe the directory before the workers start.
    prom_dir = tmp_path / "prom"
    prom_dir.mkdir()
    (prom_dir / "counter_999999.db").write_bytes(b"\x00garbage from a previous run")
    with FakeUpstream(Reply.text("hello there", usage=Usage(12, 4))) as upstream:
        (tmp_path / "catalog.toml").write_text(catalog_toml(upstream.base_url))
        (tmp_path / "config.toml").write_text(CONFIG_TOML)
        with run_server(
            tmp_path,
            "--workers",
            "2",
            MODELPORT_CATALOG=str(tmp_path / "catalog.toml"),
            MODELPORT_CONFIG=str(tmp_path / "config.toml"),
            MODELPORT_METRICS_PORT="0",
            MODELPORT_DEMO_BALANCE_USD="50",
            PROMETHEUS_MULTIPROC_DIR=str(prom_dir),
            FAKE_UPSTREAM_KEY="k",
        ) as server:
            url = metrics_url(server)
            assert not (prom_dir / "counter_999999.db").exists()
            # The start-up wait read /openapi.json: everything below is counted from this scrape on.
            before = scrape(url)
            assert total(before, "modelport_http_requests_total", route="/openapi.json", status="200") >= 2

            created = server.cli("admin", "team", "create", "broke", "--json")
            assert created.returncode == 0, created.stderr
            broke = server.cli("admin", "key", "create", "broke", "--json")
            assert broke.returncode == 0, broke.stderr
            broke_key = json.loads(broke.stdout)["key"]
            auth = {"Authorization": f"Bearer {server.demo_key}"}
            chat = {"model": "fake/chat", "messages": [{"role": "user", "content": "Hi"}]}

            # A new connection per request, so the kernel spreads them over both workers.
            for _ in range(7):
                r = httpx.post(server.text_url + "/v1/chat/completions", json=chat, headers=auth)
                assert r.status_code == 200, r.text
            # One stream whose events come 0.4 s apart: its first output token (after the empty role chunk)
            # is at least 0.4 s after its first byte.
            upstream.push(Reply.text("slow to think", usage=Usage(12, 4), chunk_delay=0.4))
            for _ in range(3):
                with httpx.stream(
                    "POST", server.text_url + "/v1/chat/completions", json={**chat, "stream": True}, headers=auth
                ) as r:
                    assert r.status_code == 200
                    r.read()
            for _ in range(4):
                r = httpx.post(
                    server.text_url + "/v1/chat/completions", json=chat, headers={"Authorization": "Bearer mp-nope"}
                )
                assert r.status_code == 401
            for _ in range(2):
                r = httpx.post(
                    server.text_url + "/v1/chat/completions",
                    json=chat,
                    headers={"Authorization": f"Bearer {broke_key}"},
                )
                assert r.status_code == 402, r.text
            for i in range(5):
                r = httpx.get(f"{server.media_url}/api/v1/tasks/task_nope{i}", headers=auth)
                assert r.status_code == 404
                r = httpx.get(f"{server.media_url}/no/such/path/{i}")
                assert r.status_code == 404

            # An upstream 429 takes the (only) deployment out of rotation in the process that saw it.
            upstream.push(Reply.error(429, "slow down", headers={"retry-after": "60"}))
            r = httpx.post(server.text_url + "/v1/chat/completions", json=chat, headers=auth)
            assert r.status_code == 429, r.text
            assert "temporarily unavailable" in r.json()["error"]["message"], r.text

            after = scrape(url)
            http = "modelport_http_requests_total"
            route = "/v1/chat/completions"
            assert total(after, http, host="text", route=route, method="POST", status="200") == 10
            assert total(after, http, host="text", route=route, status="401") == 4
            assert total(after, http, host="text", route=route, status="402") == 2
            assert total(after, http, host="text", route=route, status="429") == 1
            assert total(after, http, host="media", route="/api/v1/tasks/{task_id}", status="404") == 5
            # Random paths share one label: a URL scan cannot grow the label set.
            assert total(after, http, host="media", route="unmatched", status="404") == 5
            assert total(after, http, host="text") - total(before, http, host="text") == 17
            assert total(after, "modelport_http_request_duration_seconds_count", host="text", route=route) == 17
            up = {"provider": "fake", "model": "fake/chat", "deployment": "0"}
            assert total(after, "modelport_upstream_requests_total", **up, status="200") == 10
            assert total(after, "modelport_upstream_requests_total", **up, status="429") == 1
            assert total(after, "modelport_upstream_time_to_first_byte_seconds_count", **up) == 11
            assert total(after, "modelport_upstream_errors_total", **up, kind="rate_limited") == 1
            assert total(after, "modelport_upstream_errors_total") == 1
            # Every answered call's whole duration (and the refused one's), and each stream's first token.
            assert total(after, "modelport_upstream_duration_seconds_count", **up) == 11
            ttft = "modelport_upstream_time_to_first_token_seconds"
            assert total(after, ttft + "_count", **up) == 3
            assert total(after, ttft + "_sum", **up) >= 0.4
            assert total(after, ttft + "_bucket", **up, le="0.25") <= 2  # the slow stream's token came late
            # The gateway's own time, apart from waiting on the upstream, per relay path.
            overhead = "modelport_gateway_overhead_seconds"
            assert total(after, overhead + "_count", path="fast", stream="false") == 7
            assert total(after, overhead + "_count", path="fast", stream="true") == 3
            assert total(after, overhead + "_count") == 10
            waited = total(after, "modelport_upstream_duration_seconds_sum", **up)
            answered = total(after, "modelport_http_request_duration_seconds_sum", host="text", route=route)
            assert waited >= 0.4 * 3  # the slow stream's events were 0.4 s apart
            assert total(after, overhead + "_sum") < answered - 0.4 * 3
            # The 429 cooled the deployment in one process: counted, and its end is in the future.
            assert total(after, "modelport_deployment_cooldowns_total", **up) == 1
            until = max(v for lab, v in after["modelport_deployment_cooldown_until_seconds"] if lab == up)
            assert until > time.time() + 30
            assert total(after, "modelport_text_requests_total", model="fake/chat", outcome="success") == 10
            assert total(after, "modelport_tokens_total", model="fake/chat", direction="input") == 120
            assert total(after, "modelport_tokens_total", model="fake/chat", direction="output") == 40
            # 12 input + 4 output tokens at 1 and 2 USD per million: 20 micro-USD a request.
            assert abs(total(after, "modelport_spend_usd_total", model="fake/chat") - 10 * 20e-6) < 1e-9
            assert total(after, "modelport_refusals_total", host="text", kind="balance") == 2
            assert total(after, "modelport_refusals_total", host="text", kind="model_unavailable") == 1
            assert total(after, "modelport_refusals_total") == 3
            # No label names a team or a key.
            for samples in after.values():
                for labels, _ in samples:
                    assert not {"team", "key", "api_key"} & set(labels)
            # The batch writers report their queues (a live sum over the workers).
            queues = {labels["queue"] for labels, _ in after["modelport_write_queue_depth"]}
            assert {"settlements", "request log"} <= queues

            # Tracing is off here: a client's W3C trace context still reaches the upstream unchanged (another
            # model: fake/chat sits out its cooldown in one of the workers).
            parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            r = httpx.post(
                server.text_url + "/v1/chat/completions",
                json={**chat, "model": "fake/fallback"},
                headers={**auth, "traceparent": parent, "tracestate": "congo=t61rcWkgMzE"},
            )
            assert r.status_code == 200, r.text
            sent = upstream.last_request
            assert sent is not None
            assert sent.headers["traceparent"] == parent and sent.headers["tracestate"] == "congo=t61rcWkgMzE"


def test_counters_add_up_when_serve_picks_the_metrics_directory(tmp_path: Path) -> None:
    # No PROMETHEUS_MULTIPROC_DIR: the CLI makes one after prometheus-client was imported, and the serving
    # processes it forks must still write their values there (not keep them in memory, unseen by /metrics).
    with run_server(tmp_path, "--workers", "2", MODELPORT_METRICS_PORT="0") as server:
        url = metrics_url(server)
        auth = {"Authorization": f"Bearer {server.demo_key}"}
        http = "modelport_http_requests_total"
        before = total(scrape(url), http, host="text", route="/v1/models", status="200")
        for _ in range(6):  # a new connection per request: the kernel spreads them over both workers
            assert httpx.get(server.text_url + "/v1/models", headers=auth).status_code == 200
        assert total(scrape(url), http, host="text", route="/v1/models", status="200") - before == 6
