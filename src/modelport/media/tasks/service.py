"""Task operations behind the routes: create (validate, freeze, enqueue), read, list, cancel.

Creation order: the model (404), the body against the model's JSON Schema (400 naming the field), the
`X-Webhook-URL` (400), then one transaction that checks the tier's unfinished-task limit (429 with
`Retry-After`), freezes the price (402) and inserts the row; the queue is told after the commit (if that
fails, the reconciler queues the task from its row).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport import tracing
from modelport.accounts.limits import KeyLimits
from modelport.billing.key_budget import key_hold
from modelport.catalog import CatalogStore
from modelport.catalog_spec import MediaModel
from modelport.clock import now_ms
from modelport.errors import Conflict, InsufficientQuota, InvalidFormat, InvalidParameters, NotFound, RequestLimited
from modelport.ids import new_id
from modelport.media.tasks import repository as repo
from modelport.media.tasks.inputs import check_input_url
from modelport.media.tasks.models import load_runner
from modelport.media.tasks.pricing import price_micros
from modelport.media.tasks.repository import ListFilter, OutboxRow, TaskRow
from modelport.media.tasks.upstream import runner as upstream
from modelport.media.tasks.views import UrlFor, task_view
from modelport.money import display_usd
from modelport.net import FetchError, SafeFetcher, UrlFormatRefused
from modelport.queue import TaskQueue
from modelport.services import ServiceKey
from modelport.settings import TasksSettings
from modelport.web.query_int import MAX_QUERY_INT, query_int

log = logging.getLogger("modelport.media.tasks")

MAX_PAGE = 100
MAX_WEBHOOK_URL = 2048
STATUSES = ("queued", "processing", "success", "failed", "cancelled")
EVENT_TYPES = {"success": "task.succeeded", "failed": "task.failed", "cancelled": "task.cancelled"}
# How long a client over its concurrency limit is told to wait before retrying.
RETRY_AFTER_SECONDS = 5
TASKS: ServiceKey[TaskService] = ServiceKey("media tasks")
TASK_QUEUE: ServiceKey[TaskQueue] = ServiceKey("task queue")


def validate_input(model: MediaModel, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidParameters("the request body must be a JSON object", param="body")
    if model.input_schema is None:
        return body
    # Imported on the first task with a schema (once, ~0.05-0.1 s, 2.4 MiB): a process that takes none never loads it.
    import jsonschema

    validator = jsonschema.Draft202012Validator(model.input_schema)
    errors = sorted(validator.iter_errors(body), key=lambda e: (list(e.path), e.validator))
    if not errors:
        return body
    error = errors[0]
    if error.validator == "additionalProperties":
        allowed = set((model.input_schema.get("properties") or {}).keys())
        unknown = sorted(k for k in body if k not in allowed)
        name = unknown[0] if unknown else "body"
        raise InvalidParameters(f"{name} is not a parameter of {model.slug}", param=name)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        name = missing[0] if missing else "body"
        raise InvalidParameters(f"{name} is required", param=name)
    if error.validator == "anyOf" and all(set(sub) == {"required"} for sub in error.validator_value):
        # "Give one of these fields" rules (e.g. prompt or image_url) read better named than as a schema dump.
        names = [n for sub in error.validator_value for n in sub["required"]]
        raise InvalidParameters(f"give {' or '.join(names)}", param=names[0])
    name = ".".join(str(p) for p in error.path) or "body"
    raise InvalidParameters(f"{name}: {error.message}", param=name)


def event_payload(task: TaskRow, url_for: UrlFor) -> str:
    """The Standard Webhooks payload: `type`, `timestamp` (ISO 8601), `data` (the Task as GET returns it)."""
    when = datetime.fromtimestamp((task.ended_at_ms or now_ms()) / 1000, tz=UTC)
    body = {
        "type": EVENT_TYPES[task.status],
        "timestamp": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "data": task_view(task, url_for),
    }
    return orjson.dumps(body).decode()


class TaskService:
    def __init__(
        self,
        *,
        engine: AsyncEngine,
        catalog: CatalogStore,
        queue: TaskQueue,
        fetcher: SafeFetcher,
        settings: TasksSettings,
        url_for: UrlFor,
        tier_limit: Callable[[str], int],
    ) -> None:
        self.engine = engine
        self.catalog = catalog
        self.queue = queue
        self.fetcher = fetcher
        self.settings = settings
        self.url_for = url_for
        self._tier_limit = tier_limit

    # -- outbox rows for terminal transitions ------------------------------------------------------------

    def outbox_row(self, task: TaskRow) -> OutboxRow | None:
        if task.status not in EVENT_TYPES:
            return None
        give_up = task.result_expires_at_ms or (now_ms() + self.settings.result_retention_seconds * 1000)
        return OutboxRow(
            id="msg_" + secrets.token_hex(16),
            event_type=EVENT_TYPES[task.status],
            payload=event_payload(task, self.url_for),
            give_up_at_ms=give_up,
        )

    # -- create -----------------------------------------------------------------------------------------

    async def model(self, slug: str) -> MediaModel:
        snapshot = await self.catalog.get()
        for model in snapshot.media:
            if (
                model.slug == slug
                and model.active
                and (model.upstream is not None or (await load_runner(model.runner)) is not None)
            ):
                return model
        raise NotFound(f"model {slug!r} does not exist")

    async def check_webhook_url(self, raw: str | None) -> str | None:
        if raw is None:
            return None
        url = raw.strip()
        if not url:
            raise InvalidParameters("X-Webhook-URL is empty", param="X-Webhook-URL")
        if len(url) > MAX_WEBHOOK_URL:
            raise InvalidParameters(f"X-Webhook-URL is longer than {MAX_WEBHOOK_URL} characters", param="X-Webhook-URL")
        try:
            await self.fetcher.check_resolved(url)  # `localhost` and private names: 400 now, not at delivery
        except UrlFormatRefused as exc:
            raise InvalidFormat("X-Webhook-URL must be an https URL without userinfo", param="X-Webhook-URL") from exc
        except FetchError as exc:
            raise InvalidParameters(f"X-Webhook-URL cannot be used: {exc.detail}", param="X-Webhook-URL") from exc
        return url

    async def create(
        self,
        *,
        team_id: str,
        tier: str,
        slug: str,
        body: bytes,
        webhook_url: str | None,
        traceparent: str | None = None,
        key_id: str | None = None,
        key_limits: KeyLimits | None = None,
    ) -> dict[str, Any]:
        """`traceparent`: the client's header; the worker that runs the task continues that trace.
        `key_limits`: the creating key's; a spend limit is held in the same transaction as the team's money."""
        model = await self.model(slug)
        try:
            parsed = orjson.loads(body) if body.strip() else {}
        except orjson.JSONDecodeError as exc:
            raise InvalidParameters(f"the request body is not valid JSON: {exc}", param="body") from exc
        params = validate_input(model, parsed)
        webhook = await self.check_webhook_url(webhook_url)
        if model.upstream is not None:
            await upstream.check_inputs(self.engine, self.fetcher, team_id, model.upstream, params)
            units = upstream.units(model, params)
        else:
            task_model = await load_runner(model.runner)
            assert task_model is not None
            for field in task_model.url_fields:
                if field in params:
                    await check_input_url(self.fetcher, self.engine, team_id, field, params[field])
            units = task_model.units(params)
        price = price_micros(model, units)
        seed = int(params["seed"]) if "seed" in params else secrets.randbelow(2**32)
        now = now_ms()
        task = repo.NewTask(
            id=new_id("task", 16),
            team_id=team_id,
            model_id=model.slug,
            input=params,
            seed=seed,
            price_micros=price,
            webhook_url=webhook,
            deadline_ms=now + int(model.deadline_seconds * 1000),
            created_at_ms=now,
            trace_parent=tracing.current_traceparent(traceparent),
            key_id=key_id,
            key=None if key_id is None else key_hold(key_id, key_limits, now),
        )
        limit = self._tier_limit(tier)
        outcome, unfinished = await repo.create(self.engine, task, max_unfinished=limit)
        if outcome == "insufficient_balance":
            raise InsufficientQuota(f"the task costs {display_usd(price)} USD, more than the team's available balance")
        if outcome == "key_budget_exceeded":
            raise InsufficientQuota("the API key's spend limit is reached", code="key_budget_exceeded")
        if outcome == "too_many_tasks":
            raise RequestLimited(
                f"the team has {unfinished} unfinished media tasks, the most its tier allows ({limit});"
                " retry when one ends",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        try:
            await self.queue.enqueue([task.id])
        except Exception:
            log.exception("task %s: enqueue failed; the reconciler will queue it", task.id)
        row = await repo.get(self.engine, task.id)
        assert row is not None
        return task_view(row, self.url_for)

    # -- read -------------------------------------------------------------------------------------------

    async def get(self, team_id: str, task_id: str) -> TaskRow:
        row = await repo.get(self.engine, task_id, team_id=team_id)
        if row is None:
            raise NotFound(f"no task {task_id!r}")
        return row

    async def view(self, team_id: str, task_id: str) -> dict[str, Any]:
        return task_view(await self.get(team_id, task_id), self.url_for)

    async def list_page(self, team_id: str, query: dict[str, str]) -> dict[str, Any]:
        status = query.get("status") or None
        if status is not None and status not in STATUSES:
            raise InvalidParameters(f"status must be one of {', '.join(STATUSES)}", param="status")
        model_id = query.get("model_id") or None
        start = _int_param(query, "start_time", minimum=0)
        end = _int_param(query, "end_time", minimum=0)
        if start is not None and end is not None and end <= start:
            raise InvalidParameters("end_time must be after start_time", param="end_time")
        page = _int_param(query, "page", minimum=1) or 1
        page_size = _int_param(query, "page_size", minimum=1) or 20
        if page_size > MAX_PAGE:
            raise InvalidParameters(f"page_size must be between 1 and {MAX_PAGE}", param="page_size")
        if page > 1_000_000:
            raise InvalidParameters("page is too large", param="page")
        rows, total = await repo.list_page(
            self.engine,
            team_id,
            ListFilter(status, model_id, start, end),
            offset=(page - 1) * page_size,
            limit=page_size,
        )
        return {
            "tasks": [task_view(r, self.url_for) for r in rows],
            "total": total,
            "page": page,
            "page_size": page_size,
        }

    async def cancel(self, team_id: str, task_id: str) -> dict[str, Any]:
        """Cancel a `queued` task (releasing its frozen price); a task already running or ended is a 409."""
        await self.get(team_id, task_id)
        ended = await repo.finish_failure(
            self.engine,
            task_id,
            status="cancelled",
            code="cancelled",
            message="cancelled by the client",
            outbox=self.outbox_row,
            from_statuses=("queued",),
        )
        if ended is None:
            current = await self.get(team_id, task_id)
            raise Conflict(f"task {task_id!r} is {current.status} and can no longer be cancelled")
        return task_view(ended, self.url_for)


def _int_param(query: dict[str, str], name: str, *, minimum: int) -> int | None:
    return query_int(query.get(name), name, low=minimum, high=MAX_QUERY_INT)
