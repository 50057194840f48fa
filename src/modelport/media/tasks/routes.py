"""HTTP routes of media tasks.

- `POST /{provider}/{model}` (and the older `/{provider}/{model}/async`)  create a task (spec: Create model task)
- `GET  /api/v1/tasks/{task_id}`            one task (spec: Get task)
- `GET  /api/v1/tasks`                      the team's tasks, newest first, filtered and paged
- `POST /api/v1/tasks/{task_id}/cancel`     cancel a queued or running task (its price is released)
- `GET  /api/v1/tasks/{task_id}/events`     the task's live status (text/event-stream)
- `GET  /api/v1/tasks/{task_id}/webhooks`   the task's webhook deliveries and every attempt
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
from typing import Any

import orjson
from fastapi import APIRouter, Depends
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.errors import NotFound
from modelport.media import idempotency
from modelport.media.tasks.holds import HeldStream
from modelport.media.tasks.service import MAX_PAGE, TASKS, TaskHeaders, TaskService
from modelport.media.tasks.states import TERMINAL, TaskStatus
from modelport.services import Services
from modelport.strict_int import bounded_int
from modelport.web.body import read_body
from modelport.web.deps import get_services, media_auth
from modelport.web.envelope import ok
from modelport.web.key_rate import enforce_key_rpm
from modelport.web.key_watch import watch_key
from modelport.webhooks import outbox

router = APIRouter(tags=["media tasks"])
MAX_BODY_BYTES = 256 * 1024
_OTHER_METHODS = ["GET", "PUT", "PATCH", "DELETE"]

_CREATE_DOC: dict[str, Any] = {
    "description": (
        "Creates an asynchronous task on the model `{provider}/{model}`; the body is the model's input. Each model"
        " documents its input (fields, limits), price and example requests on its page"
        " `/docs/models/{provider}/{model}`, the `docs_url` of its `GET /api/v1/models` entry. The embedded"
        " models: [local/sketch-image](/docs/models/local/sketch-image),"
        " [local/style-transfer](/docs/models/local/style-transfer),"
        " [local/slideshow-video](/docs/models/local/slideshow-video),"
        " [local/style-video](/docs/models/local/style-video),"
        " [local/piper-speech](/docs/models/local/piper-speech) (listed with `?type=text-to-speech`)."
    ),
    "externalDocs": {"description": "Every published model's page", "url": "/docs"},
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"type": "object", "description": "The model's input"}}},
    },
    "parameters": [
        {
            "name": "X-Webhook-URL",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "format": "uri", "maxLength": 2048},
            "description": "https URL that receives the signed task event when the task ends",
        },
        {
            "name": "X-Webhook-Events",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "example": "task.started,task.progress,task.succeeded"},
            "description": (
                "Comma-separated events sent to X-Webhook-URL, any of task.started, task.progress (at most every"
                " 2 s), task.succeeded, task.failed, task.cancelled. Default: the three terminal ones"
            ),
        },
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "minLength": 1, "maxLength": 255},
            "description": (
                "1-255 printable ASCII characters. The same key with the same request (path, body and the X-"
                " headers of a task) within 24 h answers the first task again, with `Idempotent-Replayed: true`;"
                " the same key with another request is a 409"
            ),
        },
        {
            "name": "Prefer",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "example": "wait=30"},
            "description": (
                "`wait=N` (1-60): answer when the task ends or after N seconds, whichever comes first"
                " (`Preference-Applied: wait=N`); counts among the team's open streams (429 past them, before"
                " the task is created); 401 if the key is revoked or expires while it waits"
            ),
        },
        {
            "name": "X-Task-Timeout",
            "in": "header",
            "required": False,
            "schema": {"type": "integer", "minimum": 1},
            "description": (
                "Seconds (at most the model's own deadline): a task not ended by then fails with"
                " `deadline_exceeded`, refunded, whether it was queued or running"
            ),
        },
        {
            "name": "X-Result-Retention",
            "in": "header",
            "required": False,
            "schema": {"type": "integer", "minimum": 60},
            "description": (
                "Seconds the result files and their URLs live (60 to the deployment's maximum, 7 days by default)"
            ),
        },
    ],
    "responses": {
        "200": {
            "description": "The task (queued, or as it is after `Prefer: wait`)",
            "headers": {
                "Idempotent-Replayed": {
                    "schema": {"type": "string", "enum": ["true"]},
                    "description": "the answer of an earlier request with the same Idempotency-Key",
                },
                "Preference-Applied": {"schema": {"type": "string"}, "description": "`wait=N` when it was applied"},
            },
        },
        "409": {"description": "Idempotency-Key already used for another request (or its request still runs)"},
    },
}
_EVENTS_DOC: dict[str, Any] = {
    "description": (
        "Server-sent events: `event: task` with the Task (as `GET /api/v1/tasks/{task_id}` returns it in `data`)"
        " at once and on every change of its status, progress or queue position; a comment line every 15 s;"
        " the stream ends after the task's terminal state. The key is checked again at least every auth cache"
        " period: once it is revoked or expired, or its team suspended, the stream ends with `event: error`"
        " (`data` the 401 error body)."
    ),
    "responses": {
        "200": {"description": "The event stream", "content": {"text/event-stream": {}}},
        "429": {"description": "The team already holds its most open streams and waits on this server process"},
    },
}
MAX_WAIT_SECONDS = 60


async def _body(request: Request) -> bytes:
    return await read_body(request, MAX_BODY_BYTES)


def _query(name: str, schema: dict[str, object], description: str) -> dict[str, object]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


# Declared so that the document (and the schema fuzzing of it) covers them; the service checks them by hand
# (one strict integer parser: `web/query_int`), so every violation is a 400 naming the parameter.
_LIST_DOC: dict[str, object] = {
    "parameters": [
        _query("status", {"type": "string", "enum": [s.value for s in TaskStatus]}, "only tasks in this status"),
        _query("model_id", {"type": "string", "maxLength": 200}, "only tasks of this model"),
        _query("start_time", {"type": "integer", "minimum": 0}, "created at or after (Unix ms)"),
        _query("end_time", {"type": "integer", "minimum": 0}, "created before (Unix ms); after start_time"),
        _query("page", {"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 1}, "page number"),
        _query("page_size", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 20}, "tasks a page"),
    ]
}


@router.get("/api/v1/tasks", summary="The team's media tasks, newest first", openapi_extra=_LIST_DOC)
async def list_tasks(request: Request, auth: AuthContext = Depends(media_auth)) -> Response:
    return ok(await get_services(request)[TASKS].list_page(auth.team_id, dict(request.query_params)))


@router.get("/api/v1/tasks/{task_id}", summary="One media task")
async def get_task(request: Request, task_id: str, auth: AuthContext = Depends(media_auth)) -> Response:
    return ok(await get_services(request)[TASKS].view(auth.team_id, task_id))


@router.post("/api/v1/tasks/{task_id}/cancel", summary="Cancel a queued or running media task")
async def cancel_task(request: Request, task_id: str, auth: AuthContext = Depends(media_auth)) -> Response:
    return ok(await get_services(request)[TASKS].cancel(auth.team_id, task_id))


@router.get("/api/v1/tasks/{task_id}/events", summary="Live status of a media task", openapi_extra=_EVENTS_DOC)
async def task_events(request: Request, task_id: str, auth: AuthContext = Depends(media_auth)) -> Response:
    services = get_services(request)
    service = services[TASKS]
    await service.get(auth.team_id, task_id)  # 404 before the stream starts
    hold = service.holds.take(auth.team_id)  # 429 past the team's open streams; given back when the stream ends
    return HeldStream(
        service.events(auth.team_id, task_id, lambda: services.draining, watch_key(request)),
        hold,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/api/v1/tasks/{task_id}/webhooks", summary="Webhook deliveries of a task, with every attempt")
async def task_webhooks(request: Request, task_id: str, auth: AuthContext = Depends(media_auth)) -> Response:
    service = get_services(request)[TASKS]
    task = await service.get(auth.team_id, task_id)
    deliveries = await outbox.for_task(service.engine, task.id)
    return ok({"task_id": task.id, "deliveries": deliveries})


@router.post("/{provider}/{model}", summary="Create a media task", openapi_extra=_CREATE_DOC)
async def create_task(request: Request, provider: str, model: str, auth: AuthContext = Depends(media_auth)) -> Response:
    return await _create(request, provider, model, auth)


@router.post("/{provider}/{model}/async", summary="Create a media task (older path)", openapi_extra=_CREATE_DOC)
async def create_task_async(
    request: Request, provider: str, model: str, auth: AuthContext = Depends(media_auth)
) -> Response:
    return await _create(request, provider, model, auth)


async def _create(request: Request, provider: str, model: str, auth: AuthContext) -> Response:
    services = get_services(request)
    service = services[TASKS]
    slug = f"{provider}/{model}"
    if not auth.may_use(slug):
        raise NotFound(f"model {slug!r} does not exist")  # as unknown to this key: the service's own 404
    rate_headers = await enforce_key_rpm(services, auth)
    # A creation that will wait holds a place among the team's open streams, taken before the task exists:
    # a 429 then creates nothing.
    hold = service.holds.take(auth.team_id) if _wait_seconds(request.headers.get("prefer")) is not None else None
    try:
        response = await _create_once(request, services, service, slug, auth)
    finally:
        if hold is not None:
            hold.release()
    response.headers.update(rate_headers)
    return response


async def _create_once(
    request: Request, services: Services, service: TaskService, slug: str, auth: AuthContext
) -> Response:
    """Create the task, or answer again what an earlier request with the same `Idempotency-Key` got."""
    key = idempotency.key_of(request.headers.get(idempotency.HEADER))
    wait = _wait_seconds(request.headers.get("prefer"))
    headers = TaskHeaders(
        webhook_url=request.headers.get("x-webhook-url"),
        webhook_events=request.headers.get("x-webhook-events"),
        timeout=request.headers.get("x-task-timeout"),
        result_retention=request.headers.get("x-result-retention"),
    )
    body = await _body(request)
    create = functools.partial(
        service.create,
        team_id=auth.team_id,
        tier=auth.tier,
        slug=slug,
        body=body,
        headers=headers,
        traceparent=request.headers.get("traceparent"),
        key_id=auth.key_id,
        key_limits=auth.limits,
    )
    if key is None:
        data = await create()
    else:
        print_ = idempotency.fingerprint(
            "POST",
            request.url.path,
            hashlib.sha256(body).hexdigest(),
            *(value or "" for value in dataclasses.astuple(headers)),
        )
        keys = services[idempotency.IDEMPOTENCY_KEYS]
        got = await keys.claim(auth.team_id, key, print_)
        if isinstance(got, idempotency.Replay):
            if wait is None:
                return got.response()
            # A retried call that asked to wait waits too: for the same task, answered as it is then.
            waited = await _waited(request, service, auth.team_id, orjson.loads(got.data), wait)
            waited.headers["Idempotent-Replayed"] = "true"
            return waited
        try:
            data = await create(idempotency=(keys, got))
        except BaseException:
            await asyncio.shield(keys.release(got))
            raise
    if wait is None:
        return ok(data)
    return await _waited(request, service, auth.team_id, data, wait)


async def _waited(request: Request, service: TaskService, team_id: str, data: dict[str, Any], wait: int) -> Response:
    if data["status"] not in TERMINAL:
        data = await service.wait_view(team_id, data["task_id"], wait, watch_key(request))
    response = ok(data)
    response.headers["Preference-Applied"] = f"wait={wait}"
    return response


def _wait_seconds(prefer: str | None) -> int | None:
    """`wait=N` of a `Prefer` header (RFC 7240; other preferences are ignored); 400 unless 1 <= N <= 60."""
    if prefer is None:
        return None
    for preference in prefer.split(","):
        name, _, value = preference.split(";")[0].strip().partition("=")
        if name.strip().lower() != "wait":
            continue
        refusal = f"Prefer: wait must be a whole number of seconds from 1 to {MAX_WAIT_SECONDS}"
        return bounded_int(value.strip().strip('"'), "Prefer", low=1, high=MAX_WAIT_SECONDS, refusal=refusal)
    return None


# Without these, any other method on a two-segment path would answer 405 (the POST route matches the path).
@router.api_route("/{provider}/{model}", methods=_OTHER_METHODS, include_in_schema=False)
@router.api_route("/{provider}/{model}/async", methods=_OTHER_METHODS, include_in_schema=False)
async def not_a_route(request: Request) -> Response:
    raise HTTPException(status_code=404)
