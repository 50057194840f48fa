"""Task operations behind the routes: create (validate, freeze, enqueue), read, list, cancel.

Creation order: the model (404), the body against the model's JSON Schema (400 naming the field), the
`X-Webhook-URL` (400), then one transaction that checks the tier's unfinished-task limit (429 with
`Retry-After`), freezes the price (402) and inserts the row; the queue is told after the commit (if that
fails, the reconciler queues the task from its row).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport import tracing
from modelport.accounts.limits import KeyLimits
from modelport.billing import notify
from modelport.billing.key_budget import key_hold
from modelport.catalog import CatalogStore
from modelport.catalog_spec import MediaModel
from modelport.clock import now_ms
from modelport.core.sse import sse_frame
from modelport.errors import Conflict, InsufficientQuota, InvalidFormat, InvalidParameters, NotFound, RequestLimited
from modelport.ids import new_id
from modelport.media.idempotency import Claim, IdempotencyKeys
from modelport.media.tasks import reads
from modelport.media.tasks.events import TaskEvent
from modelport.media.tasks.holds import TeamHolds
from modelport.media.tasks.inputs import check_public_url
from modelport.media.tasks.live import TaskChanges
from modelport.media.tasks.placement import Placement, placement_of
from modelport.media.tasks.pricing import price_micros
from modelport.media.tasks.reads import ListFilter
from modelport.media.tasks.rows import NewTask, TaskRow
from modelport.media.tasks.states import TERMINAL, TaskStatus
from modelport.media.tasks.transitions import TaskTransitions
from modelport.media.tasks.views import UrlFor, task_view
from modelport.money import display_usd
from modelport.net import SafeFetcher
from modelport.queue import TaskQueue
from modelport.services import ServiceKey
from modelport.settings import TasksSettings
from modelport.strict_int import bounded_int
from modelport.web.deps import MediaAuthFailed
from modelport.web.key_watch import KeyWatch
from modelport.web.query_int import MAX_QUERY_INT, query_int

log = logging.getLogger("modelport.media.tasks")

MAX_PAGE = 100
MAX_WEBHOOK_URL = 2048
MIN_RESULT_LIFETIME = 60
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
        transitions: TaskTransitions,
        changes: TaskChanges | None = None,
    ) -> None:
        self.engine = engine
        self.transitions = transitions
        self.changes = changes or TaskChanges(engine, poll_seconds=settings.events_poll_seconds)
        self.catalog = catalog
        self.queue = queue
        self.fetcher = fetcher
        self.settings = settings
        self.url_for = url_for
        self._tier_limit = tier_limit
        self.holds = TeamHolds(settings.max_streams_per_team)

    # -- create -----------------------------------------------------------------------------------------

    async def placement(self, slug: str) -> Placement:
        """The active model `slug` and where its tasks run; NotFound when there is none this build can run."""
        model = (await self.catalog.get()).media.get(slug)
        placement = await placement_of(model) if model is not None and model.active else None
        if placement is None:
            raise NotFound(f"model {slug!r} does not exist")
        return placement

    async def check_webhook_url(self, raw: str | None) -> str | None:
        if raw is None:
            return None
        url = raw.strip()
        if not url:
            raise InvalidParameters("X-Webhook-URL is empty", param="X-Webhook-URL")
        if len(url) > MAX_WEBHOOK_URL:
            raise InvalidParameters(f"X-Webhook-URL is longer than {MAX_WEBHOOK_URL} characters", param="X-Webhook-URL")
        # `localhost` and private names: 400 now, not at delivery.
        bad_form = InvalidFormat("X-Webhook-URL must be an https URL without userinfo", param="X-Webhook-URL")
        await check_public_url(self.fetcher, url, param="X-Webhook-URL", bad_form=bad_form)
        return url

    async def check_options(self, model: MediaModel, headers: TaskHeaders) -> TaskOptions:
        """The optional creation headers, each checked (400 naming the header)."""
        webhook = await self.check_webhook_url(headers.webhook_url)
        events: tuple[str, ...] | None = None
        if headers.webhook_events is not None:
            names = [n.strip() for n in headers.webhook_events.split(",") if n.strip()]
            unknown = [n for n in names if n not in tuple(TaskEvent)]
            if not names or unknown:
                raise InvalidParameters(
                    f"X-Webhook-Events must name events among {', '.join(TaskEvent)}", param="X-Webhook-Events"
                )
            if webhook is None:
                raise InvalidParameters("X-Webhook-Events needs an X-Webhook-URL", param="X-Webhook-Events")
            events = tuple(n for n in TaskEvent if n in names)
        timeout = _seconds_header(headers.timeout, "X-Task-Timeout", 1, int(model.deadline_seconds))
        lifetime = _seconds_header(  # the result files' lifetime (public names keep "retention")
            headers.result_retention,
            "X-Result-Retention",
            MIN_RESULT_LIFETIME,
            self.settings.result_retention_seconds,
        )
        return TaskOptions(webhook, events, timeout, lifetime)

    async def create(
        self,
        *,
        team_id: str,
        tier: str,
        slug: str,
        body: bytes,
        webhook_url: str | None = None,
        traceparent: str | None = None,
        key_id: str | None = None,
        key_limits: KeyLimits | None = None,
        headers: TaskHeaders | None = None,
        idempotency: tuple[IdempotencyKeys, Claim] | None = None,
    ) -> dict[str, Any]:
        """`traceparent`: the client's header; the worker that runs the task continues that trace.
        `key_limits`: the creating key's; a spend limit is held in the same transaction as the team's money.
        `idempotency`: the key this request holds; its answer is recorded in the transaction that creates
        the task, so a duplicate can never create a second one."""
        placement = await self.placement(slug)
        model = placement.model
        try:
            parsed = orjson.loads(body) if body.strip() else {}
        except orjson.JSONDecodeError as exc:
            raise InvalidParameters(f"the request body is not valid JSON: {exc}", param="body") from exc
        params = validate_input(model, parsed)
        options = await self.check_options(model, headers or TaskHeaders(webhook_url=webhook_url))
        await placement.check_inputs(self.engine, self.fetcher, team_id, params)
        price = price_micros(model, placement.units(params))
        seed = int(params["seed"]) if "seed" in params else secrets.randbelow(2**32)
        now = now_ms()
        deadline_seconds = options.timeout_seconds or model.deadline_seconds
        task = NewTask(
            id=new_id("task", 16),
            team_id=team_id,
            model_id=model.slug,
            input=params,
            seed=seed,
            price_micros=price,
            webhook_url=options.webhook_url,
            deadline_ms=now + int(deadline_seconds * 1000),
            created_at_ms=now,
            trace_parent=tracing.current_traceparent(traceparent),
            key_id=key_id,
            key=None if key_id is None else key_hold(key_id, key_limits, now),
            webhook_events=options.webhook_events,
            result_retention_seconds=options.result_retention_seconds,
        )
        limit = self._tier_limit(tier)
        record = None
        answered: list[dict[str, Any]] = []
        if idempotency is not None:
            keys, claim = idempotency

            async def record(conn: AsyncConnection, row: TaskRow) -> bool:
                view = task_view(row, self.url_for, queue_position=await reads.queue_position_in(conn, row))
                answered.append(view)
                return await keys.complete_in(conn, claim, view)

        outcome, unfinished = await self.transitions.create(task, max_unfinished=limit, on_insert=record)
        if outcome == "insufficient_balance":
            await notify.balance_exhausted(self.engine, task.team_id)
            raise InsufficientQuota(f"the task costs {display_usd(price)} USD, more than the team's available balance")
        if outcome == "key_budget_exceeded":
            raise InsufficientQuota("the API key's spend limit is reached", code="key_budget_exceeded")
        if outcome == "too_many_tasks":
            raise RequestLimited(
                f"the team has {unfinished} unfinished media tasks, the most its tier allows ({limit});"
                " retry when one ends",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        if outcome == "claim_lost":
            raise Conflict("a request with this Idempotency-Key is still being processed; retry it later")
        try:
            await self.queue.enqueue([task.id])
        except Exception:
            log.exception("task %s: enqueue failed; the reconciler will queue it", task.id)
        if answered:
            return answered[0]  # what a replay will answer
        row = await reads.get(self.engine, task.id)
        assert row is not None
        return await self.view_of(row)

    # -- read -------------------------------------------------------------------------------------------

    async def get(self, team_id: str, task_id: str) -> TaskRow:
        row = await reads.get(self.engine, task_id, team_id=team_id)
        if row is None:
            raise NotFound(f"no task {task_id!r}")
        return row

    async def view(self, team_id: str, task_id: str) -> dict[str, Any]:
        return await self.view_of(await self.get(team_id, task_id))

    async def view_of(self, row: TaskRow) -> dict[str, Any]:
        """The Task object, with `queue_position` while it is queued."""
        position = await reads.queue_position(self.engine, row) if row.status == TaskStatus.QUEUED else None
        return task_view(row, self.url_for, queue_position=position)

    async def list_page(self, team_id: str, query: dict[str, str]) -> dict[str, Any]:
        try:
            status = TaskStatus(query["status"]) if query.get("status") else None
        except ValueError:
            raise InvalidParameters(f"status must be one of {', '.join(TaskStatus)}", param="status") from None
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
        rows, total = await reads.list_page(
            self.engine,
            team_id,
            ListFilter(status, model_id, start, end),
            offset=(page - 1) * page_size,
            limit=page_size,
        )
        return {
            "tasks": [await self.view_of(r) for r in rows],
            "total": total,
            "page": page,
            "page_size": page_size,
        }

    async def cancel(self, team_id: str, task_id: str) -> dict[str, Any]:
        """Cancel a `queued` or `processing` task, releasing its frozen price at once (the process running it
        sees the row change and stops the render within `progress_interval_seconds` plus one frame); an
        ended task is a 409."""
        await self.get(team_id, task_id)
        ended = await self.transitions.finish_failure(
            task_id, status=TaskStatus.CANCELLED, code="cancelled", message="cancelled by the client"
        )
        if ended is None:
            current = await self.get(team_id, task_id)
            raise Conflict(f"task {task_id!r} is {current.status} and can no longer be cancelled")
        await self.changes.publish(task_id)
        return task_view(ended, self.url_for)

    # -- live status ------------------------------------------------------------------------------------

    async def wait_view(
        self, team_id: str, task_id: str, seconds: float, key: KeyWatch | None = None
    ) -> dict[str, Any]:
        """The Task once it has ended, or as it is after `seconds` (`Prefer: wait=N`); 401 as soon as `key`
        stops authenticating (revoked, expired, team suspended) while it waits."""
        give_up = time.monotonic() + seconds
        while True:
            if key is not None and not await key.valid():
                raise MediaAuthFailed()
            row = await self.get(team_id, task_id)
            left = give_up - time.monotonic()
            if row.status in TERMINAL or left <= 0:
                return await self.view_of(row)
            await self.changes.wait(task_id, left if key is None else min(left, key.due_in()))

    async def events(
        self,
        team_id: str,
        task_id: str,
        draining: Callable[[], bool] = lambda: False,
        key: KeyWatch | None = None,
    ) -> AsyncIterator[bytes]:
        """The live status stream: an `event: task` with the Task now and on every change of its status,
        progress or queue position, a comment line every `events_keepalive_seconds`, and the end after the
        terminal state (or when the process starts shutting down: the client reconnects elsewhere). When
        `key` stops authenticating (revoked, expired, team suspended) the stream ends with an `event: error`
        carrying the 401 a new request would get."""
        keepalive = self.settings.events_keepalive_seconds
        last: tuple[object, ...] | None = None
        last_write = time.monotonic()
        while True:
            if key is not None and not await key.valid():
                yield sse_frame("error", orjson.dumps(MediaAuthFailed().media_body()))
                return
            row = await reads.get(self.engine, task_id, team_id=team_id)
            if row is None:  # pruned while watched
                return
            view = await self.view_of(row)
            seen = (view["status"], view["progress"], view["queue_position"])
            if seen != last:
                last, last_write = seen, time.monotonic()
                yield sse_frame("task", orjson.dumps(view))
            if row.status in TERMINAL or draining():
                return
            if time.monotonic() - last_write >= keepalive:
                last_write = time.monotonic()
                yield b": keepalive\n\n"
            next_keepalive = keepalive - (time.monotonic() - last_write)
            await self.changes.wait(task_id, next_keepalive if key is None else min(next_keepalive, key.due_in()))


@dataclass(frozen=True, slots=True)
class TaskHeaders:
    """The optional headers of a creation, as sent."""

    webhook_url: str | None = None
    webhook_events: str | None = None
    timeout: str | None = None
    result_retention: str | None = None


@dataclass(frozen=True, slots=True)
class TaskOptions:
    webhook_url: str | None
    webhook_events: tuple[str, ...] | None
    timeout_seconds: int | None
    result_retention_seconds: int | None


def _seconds_header(raw: str | None, name: str, low: int, high: int) -> int | None:
    if raw is None:
        return None
    return bounded_int(
        raw, name, low=low, high=high, refusal=f"{name} must be a whole number of seconds from {low} to {high}"
    )


def _int_param(query: dict[str, str], name: str, *, minimum: int) -> int | None:
    return query_int(query.get(name), name, low=minimum, high=MAX_QUERY_INT)
