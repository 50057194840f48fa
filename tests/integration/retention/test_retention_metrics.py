"""Retention's Prometheus figures from a 2-worker `modelport serve` (issue 23 item 6): rows pruned by table,
the database's size and the oldest row's age, summed over the workers (one pruner at a time among them)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.integration.gateway.conftest import CONFIG_TOML, catalog_toml
from tests.integration.ops.test_metrics_serve import metrics_url, scrape, total
from tests.integration.tasks.helpers import wait_for
from tests.support.fake_upstream import FakeUpstream
from tests.support.server import run_server

REQUESTS = 4


def test_pruned_rows_database_size_and_oldest_row_on_metrics(tmp_path: Path) -> None:
    with FakeUpstream() as upstream:
        (tmp_path / "catalog.toml").write_text(catalog_toml(upstream.base_url))
        (tmp_path / "config.toml").write_text(CONFIG_TOML)
        with run_server(
            tmp_path,
            "--workers",
            "2",
            MODELPORT_CATALOG=str(tmp_path / "catalog.toml"),
            MODELPORT_CONFIG=str(tmp_path / "config.toml"),
            MODELPORT_METRICS_PORT="0",
            MODELPORT_RETENTION__REQUEST_LOGS_DAYS="0.0001",  # 8.6 s
            MODELPORT_RETENTION__INTERVAL_SECONDS="1",
            FAKE_UPSTREAM_KEY="k",
        ) as server:
            url = metrics_url(server)
            for i in range(REQUESTS):
                got = httpx.post(
                    server.text_url + "/v1/chat/completions",
                    json={"model": "fake/chat", "messages": [{"role": "user", "content": f"m{i}"}]},
                    headers={"Authorization": f"Bearer {server.demo_key}"},
                    timeout=30,
                )
                assert got.status_code == 200, got.text
            started = time.monotonic()

            def pruned() -> bool:
                return total(scrape(url), "modelport_retention_pruned_rows_total", table="request_logs") >= REQUESTS

            wait_for(pruned, timeout=60, what="pruned rows on /metrics")
            assert time.monotonic() - started < 60
            samples = scrape(url)
            # Each row was deleted by exactly one pruner, whichever worker held the lock.
            assert total(samples, "modelport_retention_pruned_rows_total", table="request_logs") == REQUESTS
            assert total(samples, "modelport_database_size_bytes", database="sqlite") > 0
            assert "modelport_oldest_row_age_seconds" in samples
