"""The one place a process's services are built.

Each service is added once, after the services it uses, so `Services.aclose()` (reverse order) closes a
service before what it depends on: the gateway drains its requests' settlements and log rows into the
writers before the writers drain into the database. A new service is one `services.add(KEY, ...)` line.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport import metrics, tracing
from modelport.accounts import role_mappings
from modelport.alerts.service import OPERATOR_ALERTS, OperatorAlerts, with_operator_secret
from modelport.apps.health import READINESS, ReadinessChecker
from modelport.billing.credit import CREDIT, CreditBook
from modelport.billing.settlement import SETTLEMENTS, SettlementWriter
from modelport.gateway.background_responses import BACKGROUND_RESPONSES, BackgroundResponses
from modelport.gateway.cached import CachedAnswers
from modelport.gateway.logsink import RequestLogSink
from modelport.gateway.metering import METERING, Metering
from modelport.gateway.own_media import OwnMedia
from modelport.gateway.pipeline import TEXT_GATEWAY, TextGateway
from modelport.gateway.probes import PROBES, DeploymentProber
from modelport.gateway.routing import DeploymentRouter
from modelport.gateway.shared_health import SHARED_HEALTH, SharedHealth
from modelport.gateway.stored_responses import STORED_RESPONSES, StoredResponses
from modelport.gateway.upstream_call import UpstreamCaller
from modelport.media.assets.http_library import HttpLibrary
from modelport.media.assets.library import ASSET_LIBRARY, AssetLibrary, EmbeddedLibrary
from modelport.media.assets.service import ASSETS, AssetService
from modelport.media.fetch import FETCHER, OwnDownloadUrls
from modelport.media.files.service import FILES, FilesService
from modelport.media.files.storage import build_store
from modelport.media.files.sweeper import FILES_SWEEPER, Sweeper
from modelport.media.idempotency import IDEMPOTENCY_KEYS, IdempotencyKeys
from modelport.media.tasks.effects import (
    TaskEffects,
    notify_crossings,
    release_freeze,
    settle_key_budget,
    webhook_outbox,
)
from modelport.media.tasks.executor import TaskExecutor
from modelport.media.tasks.live import TASK_CHANGES, TaskChanges
from modelport.media.tasks.service import TASK_QUEUE, TASKS, TaskService
from modelport.media.tasks.task_events import TaskEvents
from modelport.media.tasks.transitions import TaskTransitions
from modelport.media.tasks.workers import TASK_WORKERS, OtherJobs, TaskWorkers
from modelport.net import SafeFetcher
from modelport.queue import JobKind, Jobs, build_queue
from modelport.requestlog.writer import REQUEST_LOG, RequestLogWriter
from modelport.response_cache import RESPONSE_CACHE, make_cache
from modelport.responses_store.background import BackgroundStore
from modelport.responses_store.conversations import ConversationStore
from modelport.responses_store.store import ResponseStore
from modelport.retention.pruner import PRUNER, build_pruner
from modelport.services import ServiceKey, Services
from modelport.settings import Settings
from modelport.upstreams.health import DEPLOYMENT_HEALTH, NEXT_PROBES
from modelport.upstreams.pool import UPSTREAMS, UpstreamPool
from modelport.webhooks import outbox
from modelport.webhooks.secrets import box_of
from modelport.webhooks.sender import WebhookSender, team_secret_lookup

log = logging.getLogger("modelport.services")
TRACING: ServiceKey[tracing.Tracing] = ServiceKey("tracing")


def build_services(
    settings: Settings, *, engine: AsyncEngine | None = None, task_workers: bool | None = None
) -> Services:
    """`task_workers`: run media tasks in this process (default: `settings.tasks.run_workers`)."""
    # Metrics are recorded only where something serves them (`serve`'s and `worker`'s /metrics).
    metrics.enable(settings.metrics_port is not None)
    services = Services(settings, engine=engine)
    traces = tracing.setup(settings.tracing)  # imports opentelemetry only when enabled
    if traces is not None:
        services.add(TRACING, traces)  # added first, closed last: flushes the spans of the others' shutdown
    db, public_url = services.db, settings.effective_public_media_url
    # The groups → teams and roles of SSO and SCIM (the SCIM hook reads them inside accounts' transactions).
    role_mappings.install(settings.oidc.role_mappings)

    # Money and logs: written off the hot path in batches, drained last.
    settlements = services.add(SETTLEMENTS, SettlementWriter(db, spill_dir=settings.data_dir / "spill" / "settlements"))
    credit = services.add(CREDIT, CreditBook(db, settlements, settings.credit))
    log_writer = services.add(REQUEST_LOG, RequestLogWriter(db, spill_dir=settings.data_dir / "spill" / "request_logs"))

    # Idempotency-Keys of the media host's creations (tasks, assets, uploads).
    services.add(IDEMPOTENCY_KEYS, IdempotencyKeys(db, ttl_seconds=settings.tasks.idempotency_key_seconds))

    # Media files, the URL fetcher, provider assets.
    files = services.add(
        FILES,
        FilesService(
            engine=db,
            store=build_store(settings.files, settings.data_dir),
            settings=settings.files,
            public_base_url=public_url,
            secret=services.secret_key,
        ),
    )
    services.add(FILES_SWEEPER, Sweeper(files, settings.files.sweep_interval_seconds))
    # Retention: one process at a time prunes logs, payloads and finished tasks (archive in the file store).
    services.add(
        PRUNER,
        build_pruner(db, settings.retention, lock_file=settings.data_dir / "retention.lock", archive_store=files.store),
    )
    fetcher = services.add(
        FETCHER,
        SafeFetcher(settings.net, own_urls=OwnDownloadUrls(files, public_url), temp_dir=settings.data_dir / "tmp"),
    )
    library = services.add(ASSET_LIBRARY, _asset_library(settings, db, files))
    services.add(ASSETS, AssetService(engine=db, fetcher=fetcher, library=library, settings=settings.assets))
    log.info("url fetcher: %s; asset library: %s", fetcher.describe(), library.backend)

    # Media tasks: the queue, the service the routes use and, where work runs here, the workers.
    queue = services.add(
        TASK_QUEUE, build_queue(settings.effective_database_url, heartbeat_seconds=settings.tasks.lease_seconds)
    )
    changes = services.add(
        TASK_CHANGES,
        TaskChanges(
            db,
            poll_seconds=settings.tasks.events_poll_seconds,
            redis=services.redis,
            prefix=settings.redis_prefix,
        ),
    )
    # What a task's change does besides its row, in its transaction: an ending settles its money (the team's
    # ledger, then the key's spend period: the lock order; then the notification thresholds it crosses),
    # and every change writes the webhook event its creator chose.
    effects = TaskEffects(
        settled=(release_freeze, settle_key_budget, notify_crossings),
        outbox=webhook_outbox(TaskEvents(settings.tasks.result_retention_seconds, files.signed_url)),
    )
    transitions = TaskTransitions(db, effects)
    services.add(
        TASKS,
        TaskService(
            engine=db,
            catalog=services.catalog,
            queue=queue,
            fetcher=fetcher,
            settings=settings.tasks,
            url_for=files.signed_url,
            tier_limit=lambda tier: settings.tier(tier).concurrent_media_tasks,
            transitions=transitions,
            changes=changes,
        ),
    )
    outbox.use_schedule(settings.webhooks)  # the give-up time of notifications enqueued by settlement code
    # Operator alerts (MODELPORT_OPERATOR_WEBHOOK_URL): events into the same outbox as task webhooks.
    alerts = None
    if settings.operator_webhook_url is not None:
        alerts = services.add(OPERATOR_ALERTS, OperatorAlerts(db, settings, url=settings.operator_webhook_url))
    # Background Responses: kept in their rows, run by the task workers of any process through this
    # process's text gateway (bound below, once it is made).
    lifetime_ms = settings.responses.lifetime_ms
    response_store = ResponseStore(db, lifetime_ms)
    background = BackgroundResponses(
        BackgroundStore(db, lifetime_ms),
        response_store,
        queue,
        services.auth.authenticate_key_id,
        poll_seconds=settings.responses.background_poll_seconds,
        lease_seconds=settings.tasks.lease_seconds,
        max_attempts=settings.tasks.max_attempts,
        draining=lambda: services.draining,
    )
    if settings.tasks.run_workers if task_workers is None else task_workers:
        secrets = team_secret_lookup(db, box_of(services))
        if settings.operator_webhook_secret is not None:
            secrets = with_operator_secret(secrets, settings)
        sender = WebhookSender(db, fetcher, settings.webhooks, box_of(services), secrets=secrets)
        if alerts is not None:
            alerts.on_event(sender.wake)
        executor = TaskExecutor(
            engine=db,
            catalog=services.catalog,
            store=files.store,
            fetcher=fetcher,
            settings=settings.tasks,
            transitions=transitions,
            on_terminal=sender.wake,
            changes=changes,
        )
        runs = OtherJobs(
            JobKind.BACKGROUND_RESPONSE,
            Jobs(background.run, settings.responses.background_concurrency),
            lambda before_ms: background.store.needing_a_run(queued_before_ms=before_ms),
        )
        services.add(
            TASK_WORKERS,
            TaskWorkers(
                engine=db, queue=queue, executor=executor, sender=sender, settings=settings.tasks, others=[runs]
            ),
        )

    # The text gateway.
    pool = services.add(UPSTREAMS, UpstreamPool())
    log_sink = RequestLogSink(log_writer, max_payload_bytes=settings.log_payload_max_bytes)
    metering = services.add(METERING, Metering(settings, db, services.limiters, credit, log_sink=log_sink))
    router = DeploymentRouter(
        cooldown_seconds=settings.upstream_cooldown_seconds,
        routing=settings.routing,
        listener=alerts.heard if alerts is not None else None,
    )
    services.add(DEPLOYMENT_HEALTH, router)  # the operator console reads this process's cooldowns
    if services.redis is not None:  # cooldowns shared by every process
        services.add(SHARED_HEALTH, SharedHealth(services.redis, settings.redis_prefix, router))
    prober = services.add(PROBES, DeploymentProber(services.catalog, router, pool))
    services.add(NEXT_PROBES, prober.next_probe)
    caller = UpstreamCaller(pool, router)
    stored = StoredResponses(response_store, ConversationStore(db, lifetime_ms))
    responses = services.add(STORED_RESPONSES, stored)
    cache = services.add(RESPONSE_CACHE, make_cache(settings, db, services.redis))
    cached = CachedAnswers(cache, metering, responses)
    gateway = services.add(
        TEXT_GATEWAY,
        TextGateway(services.catalog, caller, metering, OwnMedia(files, public_url), responses, cached, background),
    )
    background.bind(gateway.handle_body)
    # Added after the task workers: closed before them, so its runs end (unsettled, queued again) first.
    services.add(BACKGROUND_RESPONSES, background)
    services.add(READINESS, ReadinessChecker(services))
    return services


def _asset_library(settings: Settings, db: AsyncEngine, files: FilesService) -> AssetLibrary:
    if settings.assets.backend == "http":
        return HttpLibrary(settings.assets, engine=db)
    return EmbeddedLibrary(
        db,
        files.store,
        work_dir=settings.data_dir / "tmp",
        concurrency=settings.assets.moderation_concurrency,
        time_limit=settings.assets.moderation_time_limit_seconds,
    )
