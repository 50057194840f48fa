"""The scaled-out topology of docs/deploy.md, run on this machine: PostgreSQL, Redis, an S3 server (moto),
two `modelport serve --no-workers` and two `modelport worker` processes, each in its own data directory as
on separate machines.

Text requests and uploads go through both servers: the rate limit is shared, the team has one balance and
one log, a file uploaded on one server downloads from the other, a media task created on a server is run
by a worker (continuing the client's trace: every process traces into one file), each worker's /metrics
counts its work, and the ledger is exact. Then one server and one worker are SIGKILLed: the others carry
on, and the money the dead server had reserved comes back.

There is no load balancer here, so each server's public media URL is its own address; the download URLs of
one server still work on the other (same S3 bucket, same secret key), which is what a balancer relies on.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.tasks.helpers import (
    ADMIN_TOKEN,
    PRICE_MICROS,
    SKETCH,
    Team,
    WebhookReceiver,
    create,
    free_port,
    ledger_report,
    make_team,
    task_server,
    wait_ended,
    wait_for,
)
from tests.support.catalogs import shipped_with_fake_chat
from tests.support.databases import migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.s3 import moto_s3
from tests.support.server import RunningServer, server_env

REDIS_URL = "redis://127.0.0.1:6379/0"
TIERS = """
[[tiers]]
name = "free"
qualifying_topup_usd = "0"
inference_rpm = 6
query_rpm = 100000
concurrent_media_tasks = 2
concurrent_requests = 16

[[tiers]]
name = "fleet"
qualifying_topup_usd = "10"
inference_rpm = 100000
query_rpm = 100000
concurrent_media_tasks = 10
concurrent_requests = 256
"""
# 12 input tokens at 1 USD and 4 output tokens at 2 USD per million.
TEXT_COST_MICROS = 20
FLEET_TOPUP_MICROS = 20_000_000
CHAT = {"model": "fake/chat", "messages": [{"role": "user", "content": "Hi"}]}


def test_two_servers_two_workers_share_everything_and_survive_a_kill(tmp_path: Path) -> None:
    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_topology, tmp_path, database_url)

    asyncio.run(run())


@contextmanager
def _worker(data_dir: Path, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A `modelport worker` with its own /metrics (port 0); yields the process and its metrics URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "modelport", "worker"],
        env=server_env(data_dir, **env, MODELPORT_METRICS_PORT="0"),
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        assert "worker started" in lines[0], lines
        assert lines[1].startswith("metrics:"), lines
        yield process, lines[1].split()[1]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()  # or the GC reports the pipe unclosed during a later test


def _counter(url: str, name: str, **labels: str) -> float:
    text = httpx.get(url, timeout=10).text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def _chat(server: RunningServer, team: Team, *, stream: bool = False) -> int:
    body = {**CHAT, "stream": True} if stream else CHAT
    with httpx.stream("POST", server.text_url + "/v1/chat/completions", json=body, headers=team.headers) as r:
        r.read()
        return r.status_code


def _logs_total(server: RunningServer, team: Team) -> int:
    now = int(time.time())
    r = httpx.get(
        server.text_url + "/v1/logs",
        params={"start_time": now - 3600, "end_time": now + 3600},
        headers=team.headers,
        timeout=30,
    )
    assert r.status_code == 200, r.text
    total: int = r.json()["total"]
    return total


def _on(server: RunningServer, url: str) -> str:
    """The same signed URL, sent to another server."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=urlsplit(server.media_url).netloc))


def _trace(path: Path, trace_id: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [s for s in lines if s["context"]["trace_id"] == "0x" + trace_id]


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 90)).save(out, format="PNG")
    return out.getvalue()


def _settled(database_url: str, team: Team, expected_balance: int) -> None:
    """Every reservation returned (frozen 0), the balance what the charges say, and equal to the ledger."""

    def done() -> bool:
        report = ledger_report(database_url, team.id)
        return report.frozen_micros == 0 and report.balance_micros == expected_balance

    wait_for(done, timeout=60, what=f"{team.name}: reservations returned and every charge written")
    report = ledger_report(database_url, team.id)
    assert report.entries_sum == report.balance_micros == expected_balance


def _topology(tmp_path: Path, database_url: str) -> None:
    catalog = tmp_path / "catalog.toml"
    spans_file = tmp_path / "spans.jsonl"
    config = tmp_path / "config.toml"
    receiver = WebhookReceiver()
    with (
        FakeUpstream(Reply.text("hello there", usage=Usage(12, 4))) as upstream,
        receiver.running(),
        ExitStack() as stack,
    ):
        catalog.write_text(shipped_with_fake_chat(upstream.base_url))
        config.write_text(TIERS)
        shared = {
            **stack.enter_context(moto_s3("mp-topology-")),
            "MODELPORT_DATABASE_URL": database_url,
            "MODELPORT_REDIS_URL": REDIS_URL,
            "MODELPORT_RATELIMIT_PREFIX": "mp-topology-" + secrets.token_hex(4),
            "MODELPORT_CATALOG": str(catalog),
            "MODELPORT_CONFIG": str(config),
            "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
            # A dead process's reservations come back within lease + sweep interval.
            "MODELPORT_CREDIT__LEASE_SECONDS": "2",
            "MODELPORT_CREDIT__SWEEP_INTERVAL_SECONDS": "0.5",
            "MODELPORT_TASKS__LEASE_SECONDS": "3",
            "MODELPORT_TASKS__RECONCILE_INTERVAL_SECONDS": "0.5",
            "FAKE_KEY": "k",
            "MODELPORT_NET__ALLOW_HOSTS": receiver.host,
            # Every process traces into one file (each appends whole lines).
            "MODELPORT_TRACING__ENABLED": "true",
            "MODELPORT_TRACING__EXPORTER": "file",
            "MODELPORT_TRACING__FILE": str(spans_file),
        }
        ports = [free_port(), free_port()]
        envs = [{**shared, "MODELPORT_PUBLIC_MEDIA_URL": f"http://127.0.0.1:{port}"} for port in ports]
        # The four processes start at once, as they would on four machines.
        with ThreadPoolExecutor(max_workers=4) as pool:
            servers = [
                pool.submit(stack.enter_context, task_server(tmp_path / f"serve{i}", env, "--no-workers"))
                for i, env in enumerate(envs)
            ]
            workers = [pool.submit(stack.enter_context, _worker(tmp_path / f"worker{i}", envs[1])) for i in (1, 2)]
            a, b = (f.result() for f in servers)
            (w1, w1_metrics), (w2, w2_metrics) = (f.result() for f in workers)

        fleet = make_team(a, "fleet", topup_usd="20")
        tiny = make_team(b, "tiny", topup_usd="1")

        # Text through both servers, streaming and not.
        for i in range(16):
            assert _chat((a, b)[i % 2], fleet, stream=i % 4 == 3) == 200

        # One rate limit across both servers: 6 a minute, however the requests are spread.
        started = time.monotonic()
        statuses = [_chat((a, b)[i % 2], tiny) for i in range(10)]
        elapsed = time.monotonic() - started
        assert set(statuses) == {200, 429}, statuses
        admitted = statuses.count(200)
        assert 6 <= admitted <= 6 + int(elapsed // 10), (statuses, elapsed)

        # A file uploaded on one server is listed by and downloads from the other.
        png = _png()
        up = httpx.post(
            a.media_url + "/api/v1/media/files", files={"file": ("red.png", png)}, headers=fleet.headers, timeout=30
        )
        assert up.status_code == 200, up.text
        uploaded = up.json()["data"]
        listed = httpx.get(b.media_url + "/api/v1/media/files", headers=fleet.headers, timeout=30).json()["data"]
        assert [f["file_id"] for f in listed["files"]] == [uploaded["file_id"]]
        assert httpx.get(listed["files"][0]["download_url"], timeout=30).content == png
        assert httpx.get(_on(b, uploaded["download_url"]), timeout=30).content == png

        # A media task created on a server (which runs none) is run by a worker; its result downloads anywhere.
        # The client's trace continues in the worker that runs the task, through the task row.
        trace_id, client_parent = secrets.token_hex(16), secrets.token_hex(8)
        made = httpx.post(
            a.media_url + SKETCH,
            json={"prompt": "a lighthouse", "width": 256, "height": 256},
            headers={
                **fleet.headers,
                "X-Webhook-URL": receiver.url(),
                "traceparent": f"00-{trace_id}-{client_parent}-01",
            },
            timeout=30,
        )
        assert made.status_code == 200, made.text
        task_id = made.json()["data"]["task_id"]
        task = wait_ended(b.media_url, fleet, [task_id], timeout=90)[task_id]
        wait_for(lambda: "media task" in {s["name"] for s in _trace(spans_file, trace_id)}, what="the task's span")
        spans = {s["name"]: s for s in _trace(spans_file, trace_id)}
        created = spans["POST /{provider}/{model}"]
        assert created["parent_id"] == "0x" + client_parent
        assert spans["media task"]["parent_id"] == created["context"]["span_id"]
        assert task["status"] == "success", task
        report = ledger_report(database_url, fleet.id)
        assert int(str(report.claimed_by[task_id]).split(":")[1]) in {w1.pid, w2.pid}, report.claimed_by
        image = httpx.get(_on(b, task["result"]["resources"][0]["url"]), timeout=30)
        assert image.status_code == 200 and Image.open(io.BytesIO(image.content)).size == (256, 256)
        # Each worker reports what it did on its own /metrics: together, one task run and one webhook sent.
        wait_for(lambda: task_id in receiver.by_task(delivered=True), what="the task's webhook")
        finished = "modelport_media_tasks_finished_total"
        assert sum(_counter(u, finished, status="success") for u in (w1_metrics, w2_metrics)) == 1
        delivered = "modelport_webhook_deliveries_total"
        wait_for(
            lambda: sum(_counter(u, delivered, status="delivered") for u in (w1_metrics, w2_metrics)) == 1,
            what="the delivery counted",
        )
        assert sum(_counter(u, "modelport_webhook_attempts_total") for u in (w1_metrics, w2_metrics)) == 1

        # One log (both servers list every row) and one balance, charged exactly.
        wait_for(lambda: _logs_total(a, fleet) == 16, timeout=30, what="16 log rows")
        assert _logs_total(b, fleet) == 16
        wait_for(lambda: _logs_total(a, tiny) == 10, timeout=30, what="10 log rows (refusals too)")
        _settled(database_url, fleet, FLEET_TOPUP_MICROS - 16 * TEXT_COST_MICROS - PRICE_MICROS)
        _settled(database_url, tiny, 1_000_000 - admitted * TEXT_COST_MICROS)

        # Lose a server and a worker without warning, the server in the middle of a stream: the rest carry on.
        for _ in range(4):
            assert _chat(a, fleet) == 200
        wait_for(lambda: _logs_total(b, fleet) == 20, timeout=30, what="20 log rows")
        _settled(database_url, fleet, FLEET_TOPUP_MICROS - 20 * TEXT_COST_MICROS - PRICE_MICROS)
        upstream.push(Reply.text("never finished", usage=Usage(12, 4), chunk_delay=1.0))
        calls = upstream.call_count()
        cut = threading.Thread(target=_chat_ignoring_errors, args=(a, fleet))
        cut.start()
        wait_for(lambda: upstream.call_count() > calls, timeout=30, what="the stream to reach the upstream")
        assert ledger_report(database_url, fleet.id).frozen_micros > 0  # the server holds a reservation
        a.process.send_signal(signal.SIGKILL)
        w1.send_signal(signal.SIGKILL)
        a.process.wait(timeout=30)
        w1.wait(timeout=30)
        cut.join(timeout=60)
        for i in range(8):
            assert _chat(b, fleet, stream=i % 2 == 1) == 200
        assert httpx.get(_on(b, uploaded["download_url"]), timeout=30).content == png
        made = create(b, fleet, {"prompt": "after the crash", "width": 256, "height": 256})
        assert made.status_code == 200, made.text
        second = made.json()["data"]["task_id"]
        assert wait_ended(b.media_url, fleet, [second], timeout=90)[second]["status"] == "success"
        assert int(str(ledger_report(database_url, fleet.id).claimed_by[second]).split(":")[1]) == w2.pid
        # The stream cut by the crash is neither charged nor logged (its usage died with the server); what the
        # server had reserved comes back through the survivor's sweep, and the ledger is exact.
        wait_for(lambda: _logs_total(b, fleet) == 28, timeout=30, what="the survivor's log rows")
        _settled(database_url, fleet, FLEET_TOPUP_MICROS - 28 * TEXT_COST_MICROS - 2 * PRICE_MICROS)
        assert _logs_total(b, fleet) == 28
        assert upstream.call_count() == 16 + admitted + 4 + 1 + 8


def _chat_ignoring_errors(server: RunningServer, team: Team) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the server is killed mid-stream
        _chat(server, team, stream=True)
