"""HTTP routes of media tasks.

- `POST /{provider}/{model}` (and the older `/{provider}/{model}/async`)  create a task (spec: Create model task)
- `GET  /api/v1/tasks/{task_id}`            one task (spec: Get task)
- `GET  /api/v1/tasks`                      the team's tasks, newest first, filtered and paged
- `POST /api/v1/tasks/{task_id}/cancel`     cancel a queued task (its price is released)
- `GET  /api/v1/tasks/{task_id}/webhooks`   the task's webhook deliveries and every attempt
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.errors import NotFound
from modelport.media.tasks.service import MAX_PAGE, STATUSES, TASKS
from modelport.media.webhooks import outbox
from modelport.web.body import read_body
from modelport.web.deps import get_services, media_auth
from modelport.web.envelope import ok
from modelport.web.key_rate import enforce_key_rpm

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
        }
    ],
}


async def _body(request: Request) -> bytes:
    return await read_body(request, MAX_BODY_BYTES)


def _query(name: str, schema: dict[str, object], description: str) -> dict[str, object]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


# Declared so that the document (and the schema fuzzing of it) covers them; the service checks them by hand
# (one strict integer parser: `web/query_int`), so every violation is a 400 naming the parameter.
_LIST_DOC: dict[str, object] = {
    "parameters": [
        _query("status", {"type": "string", "enum": list(STATUSES)}, "only tasks in this status"),
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


@router.post("/api/v1/tasks/{task_id}/cancel", summary="Cancel a queued media task")
async def cancel_task(request: Request, task_id: str, auth: AuthContext = Depends(media_auth)) -> Response:
    return ok(await get_services(request)[TASKS].cancel(auth.team_id, task_id))


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
    headers = await enforce_key_rpm(services, auth)
    data = await service.create(
        team_id=auth.team_id,
        tier=auth.tier,
        slug=slug,
        body=await _body(request),
        webhook_url=request.headers.get("x-webhook-url"),
        traceparent=request.headers.get("traceparent"),
        key_id=auth.key_id,
        key_limits=auth.limits,
    )
    response = ok(data)
    response.headers.update(headers)
    return response


# Without these, any other method on a two-segment path would answer 405 (the POST route matches the path).
@router.api_route("/{provider}/{model}", methods=_OTHER_METHODS, include_in_schema=False)
@router.api_route("/{provider}/{model}/async", methods=_OTHER_METHODS, include_in_schema=False)
async def not_a_route(request: Request) -> Response:
    raise HTTPException(status_code=404)
