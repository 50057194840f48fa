"""Prometheus metrics: what is recorded, and how `serve` exposes it (`MODELPORT_METRICS_PORT`, default off).

With several serving processes prometheus-client runs in its multiprocess mode: each one writes its
values to memory-mapped files in one directory (PROMETHEUS_MULTIPROC_DIR, set by the CLI before the
supervisor starts them, wiped first) and the supervisor's `/metrics` reads them all. Every gauge names its
multiprocess mode; a dead process's live-gauge files are swept (`mark_process_dead`), its counters stay.

Labels are bounded: host and route template (never the raw path), HTTP status, and the catalog's provider,
model and deployment. Nothing per team or per key: those belong in the usage rollups.

Recording is nearly free: each metric is a `Family` that caches its labelled children (prometheus-client's
`labels()` validates and takes a lock on every call, a few microseconds), and while metrics are off
(`enable(False)`, the default; `build_services` turns them on when `MODELPORT_METRICS_PORT` is set) every
`labels()` returns one shared object whose methods do nothing.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess, start_http_server, values

log = logging.getLogger("modelport.metrics")
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
TASK_BUCKETS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)


class Off:
    """What a metric's `labels()` gives while metrics are off: records nothing."""

    __slots__ = ()

    def inc(self, amount: float = 1) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass


OFF = Off()
_enabled = False
M = TypeVar("M", Counter, Gauge, Histogram)


def enable(on: bool) -> None:
    """Record metrics in this process (only when something serves them: `MODELPORT_METRICS_PORT`)."""
    global _enabled
    _enabled = on


def enabled() -> bool:
    return _enabled


class Family(Generic[M]):
    __slots__ = ("_children", "metric")
    metric: M

    def __init__(self, metric: M) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], M] = {}

    def labels(self, *values: str) -> M | Off:
        if not _enabled:
            return OFF
        child = self._children.get(values)
        if child is None:
            # A metric without labels is its own (only) child.
            child = self._children[values] = self.metric.labels(*values) if values else self.metric
        return child


HTTP_REQUESTS = Family(
    Counter("modelport_http_requests", "HTTP requests answered", ["host", "route", "method", "status"])
)
HTTP_DURATION = Family(
    Histogram(
        "modelport_http_request_duration_seconds",
        "From the request's arrival to the end of its response (streams: the last byte)",
        ["host", "route", "status"],
        buckets=LATENCY_BUCKETS,
    )
)
UPSTREAM_REQUESTS = Family(
    Counter(
        "modelport_upstream_requests",
        "Calls to upstream deployments by the status they answered (0: unreachable)",
        ["provider", "model", "deployment", "status"],
    )
)
UPSTREAM_ERRORS = Family(
    Counter(
        "modelport_upstream_errors",
        "Upstream calls that failed: unreachable, or an error status",
        ["provider", "model", "deployment", "kind"],
    )
)
UPSTREAM_TTFB = Family(
    Histogram(
        "modelport_upstream_time_to_first_byte_seconds",
        "From sending the upstream request to its response headers",
        ["provider", "model", "deployment"],
        buckets=LATENCY_BUCKETS,
    )
)
UPSTREAM_DURATION = Family(
    Histogram(
        "modelport_upstream_duration_seconds",
        "From sending the upstream request to the end of its answer (streams: the last chunk)",
        ["provider", "model", "deployment"],
        buckets=LATENCY_BUCKETS,
    )
)
UPSTREAM_TTFT = Family(
    Histogram(
        "modelport_upstream_time_to_first_token_seconds",
        "Streams: from sending the upstream request to the first event carrying output (text, reasoning, tool call)",
        ["provider", "model", "deployment"],
        buckets=LATENCY_BUCKETS,
    )
)
GATEWAY_OVERHEAD = Family(
    Histogram(
        "modelport_gateway_overhead_seconds",
        "Time a text request spent in the gateway rather than waiting on the upstream",
        ["path", "stream"],
        buckets=OVERHEAD_BUCKETS,
    )
)
UPSTREAM_ATTEMPTS = Family(
    Histogram(
        "modelport_upstream_attempts",
        "Upstream calls one text request made before it was answered or gave up (failover)",
        ["provider", "model"],
        buckets=(1, 2, 3, 4, 5, 8, 12, 20),
    )
)
FALLBACKS = Family(
    Counter(
        "modelport_fallbacks",
        "Text requests answered by a fallback model instead of the requested one",
        ["model", "served_model"],
    )
)
DEPLOYMENT_COOLDOWNS = Family(
    Counter(
        "modelport_deployment_cooldowns",
        "Times a process took a deployment out of rotation (a 429, or repeated failures)",
        ["provider", "model", "deployment"],
    )
)
DEPLOYMENT_COOLDOWN_UNTIL = Family(
    Gauge(
        "modelport_deployment_cooldown_until_seconds",
        "UNIX time until which a deployment sits out (latest over live processes; in the past: in rotation)",
        ["provider", "model", "deployment"],
        multiprocess_mode="livemax",
    )
)
TOKENS = Family(Counter("modelport_tokens", "Tokens billed", ["model", "direction"]))
SPEND = Family(Counter("modelport_spend_usd", "Amount billed, in USD", ["model"]))
TEXT_OUTCOMES = Family(
    Counter(
        "modelport_text_requests",
        "Admitted text requests by how they ended (success, error, cancelled)",
        ["model", "outcome"],
    )
)
REFUSALS = Family(
    Counter("modelport_refusals", "Requests refused before the upstream (402 balance, 429 limits)", ["host", "kind"])
)
WRITE_QUEUE_DEPTH = Family(
    Gauge(
        "modelport_write_queue_depth",
        "Rows waiting to be written, per batch writer (settlements, request logs)",
        ["queue"],
        multiprocess_mode="livesum",
    )
)
WRITE_SPILLED = Family(
    Counter(
        "modelport_write_spilled_rows",
        "Rows a batch writer sent to its spill file (database unreachable, or too many rows waiting)",
        ["queue"],
    )
)
WRITE_DROPPED = Family(
    Counter(
        "modelport_write_dropped_rows",
        "Rows a batch writer lost: no room in memory and no spill file to take them",
        ["queue"],
    )
)
WRITE_FLUSH_SECONDS = Family(
    Histogram(
        "modelport_write_flush_seconds",
        "Time to write one batch (settlements, request logs), retries included",
        ["queue"],
        buckets=LATENCY_BUCKETS,
    )
)

RETENTION_PRUNED = Family(
    Counter(
        "modelport_retention_pruned_rows",
        "Rows the retention pruner removed, by table (request_logs.payloads: payloads emptied)",
        ["table"],
    )
)
RETENTION_ARCHIVE_FILES = Family(
    Counter("modelport_retention_archive_files", "Archive files written and verified before rows left", ["table"])
)
DATABASE_SIZE = Family(
    Gauge(
        "modelport_database_size_bytes",
        "The database's size (PostgreSQL pg_database_size; SQLite the file and its WAL), at the last pruning run",
        ["database"],
        multiprocess_mode="mostrecent",
    )
)
OLDEST_LOG_AGE = Family(
    Gauge(
        "modelport_oldest_row_age_seconds",
        "Age of the oldest row left, at the last pruning run",
        ["table"],
        multiprocess_mode="mostrecent",
    )
)

TASKS_CREATED = Family(
    Counter("modelport_media_tasks_created", "Media tasks accepted (money frozen, row written)", ["model"])
)
TASKS_FINISHED = Family(
    Counter("modelport_media_tasks_finished", "Media tasks that reached a final status", ["model", "status"])
)
TASK_DURATION = Family(
    Histogram(
        "modelport_media_task_duration_seconds",
        "From a media task's creation to its final status",
        ["model", "status"],
        buckets=TASK_BUCKETS,
    )
)
TASKS_UNFINISHED = Family(
    Gauge(
        "modelport_media_tasks_unfinished",
        "Media tasks waiting for a worker (queued) or running (processing), all teams, read by the reconciler",
        ["status"],
        multiprocess_mode="livemostrecent",
    )
)
TASK_QUEUE_AGE = Family(
    Gauge(
        "modelport_media_task_queue_age_seconds",
        "Age of the oldest media task waiting for a worker (0: none waits), all teams, read by the reconciler",
        [],
        multiprocess_mode="livemostrecent",
    )
)
OPERATOR_ALERTS = Family(
    Counter(
        "modelport_operator_alerts",
        "Operator alert events written to the webhook outbox (deployment.down, tasks.backlog, ...)",
        ["event"],
    )
)
WEBHOOK_ATTEMPTS = Family(
    Counter(
        "modelport_webhook_attempts",
        "Webhook requests sent, by outcome (delivered, gone, rate_limited, failed)",
        ["outcome"],
    )
)
WEBHOOK_FINAL = Family(
    Counter(
        "modelport_webhook_deliveries",
        "Webhook deliveries that ended: delivered, stopped (410 Gone) or failed (gave up)",
        ["status"],
    )
)


def deployment_label(candidate_key: str) -> str:
    """`provider/model#i` keys of the router: the deployment part."""
    return candidate_key.rpartition("#")[2] or "0"


def provider_of(model_id: str) -> str:
    return model_id.partition("/")[0]


def deployment_labels(candidate_key: str) -> tuple[str, str, str]:
    """provider, model and deployment of a router key `provider/model#i`."""
    model, _, index = candidate_key.rpartition("#")
    return provider_of(model), model, index or "0"


def prepare_multiprocess_dir() -> Path:
    """Before the serving processes start: the directory they write to, empty, announced in the environment."""
    configured = os.environ.get(MULTIPROC_ENV)
    if configured:
        path = Path(configured)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
    else:
        path = Path(tempfile.mkdtemp(prefix="modelport-metrics-"))
    os.environ[MULTIPROC_ENV] = str(path)  # inherited by the spawned serving processes
    # prometheus-client picked its value class when imported (before the variable was set): serving processes
    # forked from this one create their values with it.
    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]
    return path


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


CACHE_LOOKUPS = Family(
    Counter(
        "modelport_response_cache_lookups",
        "Response cache lookups of caching teams, by result (hit, miss, skip)",
        ["team", "result"],
    )
)
CACHE_EVICTIONS = Family(
    Counter(
        "modelport_response_cache_evictions",
        "Response cache entries evicted (least recently used) to keep the store under its size bound",
        ["team"],
    )
)
CACHE_BYTES = Family(
    Gauge(
        "modelport_response_cache_bytes",
        "Bytes of the response cache a team's entries take (as last seen by a process storing one)",
        ["team"],
        multiprocess_mode="livemostrecent",
    )
)
