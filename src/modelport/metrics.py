"""Prometheus metrics: what is recorded, and how `serve` exposes it (`MODELPORT_METRICS_PORT`, default off).

With several worker processes prometheus-client runs in its multiprocess mode: each worker writes its
values to memory-mapped files in one directory (PROMETHEUS_MULTIPROC_DIR, set by the supervisor before it
starts the workers, wiped first) and the supervisor's `/metrics` reads them all. Every gauge names its
multiprocess mode; a dead worker's live-gauge files are swept (`mark_process_dead`), its counters stay.

Labels are bounded: host and route template (never the raw path), HTTP status, and the catalog's provider,
model and deployment. Nothing per team or per key: those belong in the usage rollups.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess, start_http_server

log = logging.getLogger("modelport.metrics")
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

HTTP_REQUESTS = Counter("modelport_http_requests", "HTTP requests answered", ["host", "route", "method", "status"])
HTTP_DURATION = Histogram(
    "modelport_http_request_duration_seconds",
    "From the request's arrival to the end of its response (streams: the last byte)",
    ["host", "route", "status"],
    buckets=LATENCY_BUCKETS,
)
UPSTREAM_REQUESTS = Counter(
    "modelport_upstream_requests",
    "Calls to upstream deployments by the status they answered (0: unreachable)",
    ["provider", "model", "deployment", "status"],
)
UPSTREAM_ERRORS = Counter(
    "modelport_upstream_errors",
    "Upstream calls that failed: unreachable, or an error status",
    ["provider", "model", "deployment", "kind"],
)
UPSTREAM_TTFB = Histogram(
    "modelport_upstream_time_to_first_byte_seconds",
    "From sending the upstream request to its response headers",
    ["provider", "model", "deployment"],
    buckets=LATENCY_BUCKETS,
)
TOKENS = Counter("modelport_tokens", "Tokens billed", ["model", "direction"])
SPEND = Counter("modelport_spend_usd", "Amount billed, in USD", ["model"])
TEXT_OUTCOMES = Counter(
    "modelport_text_requests",
    "Admitted text requests by how they ended (success, error, cancelled)",
    ["model", "outcome"],
)
REFUSALS = Counter(
    "modelport_refusals", "Requests refused before the upstream (402 balance, 429 limits)", ["host", "kind"]
)
WRITE_QUEUE_DEPTH = Gauge(
    "modelport_write_queue_depth",
    "Rows waiting to be written, per batch writer (settlements, request logs)",
    ["queue"],
    multiprocess_mode="livesum",
)
WRITE_FLUSH_SECONDS = Histogram(
    "modelport_write_flush_seconds",
    "Time to write one batch (settlements, request logs), retries included",
    ["queue"],
    buckets=LATENCY_BUCKETS,
)


def deployment_label(candidate_key: str) -> str:
    """`provider/model#i` keys of the router: the deployment part."""
    return candidate_key.rpartition("#")[2] or "0"


def provider_of(model_id: str) -> str:
    return model_id.partition("/")[0]


def prepare_multiprocess_dir() -> Path:
    """Before the workers start: the directory they write to, empty, announced in the environment."""
    configured = os.environ.get(MULTIPROC_ENV)
    if configured:
        path = Path(configured)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
    else:
        path = Path(tempfile.mkdtemp(prefix="modelport-metrics-"))
    os.environ[MULTIPROC_ENV] = str(path)  # inherited by the spawned workers
    return path


def worker_died(pid: int, path: Path) -> None:
    multiprocess.mark_process_dead(pid, str(path))  # type: ignore[no-untyped-call]


def serve_metrics(host: str, port: int, multiprocess_dir: Path | None) -> int:
    """Start the `/metrics` endpoint in a daemon thread; return its port (0 picks a free one)."""
    if multiprocess_dir is None:
        from prometheus_client import REGISTRY

        registry: CollectorRegistry = REGISTRY
    else:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=str(multiprocess_dir))  # type: ignore[no-untyped-call]
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return int(server.server_address[1])
