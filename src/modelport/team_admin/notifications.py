"""A team's notifications over HTTP, in the media envelope; keys with `role: admin` only (docs/api/notifications.md).

- `GET  /api/v1/notifications`             the settings (every field null or empty when unset)
- `PUT  /api/v1/notifications`             replace them (audited); the URL checked like a task's webhook URL
- `POST /api/v1/notifications/test`        enqueue a `notification.test` event to the URL (query rate limit; one
                                             pending per team)
- `GET  /api/v1/notifications/deliveries`  the events sent, with every attempt, newest first (paged)
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts import notifications
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission
from modelport.billing import notify
from modelport.errors import InvalidFormat, InvalidParameters
from modelport.media.fetch import FETCHER
from modelport.net import FetchError
from modelport.net.errors import UrlFormatRefused
from modelport.services import Services
from modelport.team_admin.body import json_body
from modelport.web.actor import request_actor
from modelport.web.deps import get_services, media_auth_with
from modelport.web.envelope import ok
from modelport.web.query_int import query_int
from modelport.web.query_limit import enforce_query_limit
from modelport.webhooks import outbox

router = APIRouter(prefix="/api/v1/notifications", tags=["notifications"])
MAX_PAGE = 100
MAX_ID = 64

_BODY = {
    "requestBody": {
        "required": False,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "description": "Notification settings (docs/api/notifications.md); a field left out is off",
                    "additionalProperties": False,
                    "properties": {
                        "url": {"type": "string", "maxLength": notifications.MAX_URL, "nullable": True},
                        "balance_below_usd": {"type": "string", "example": "5.00", "nullable": True},
                        "key_spend_percent": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 1, "maximum": 100},
                            "maxItems": notifications.MAX_PERCENTS,
                            "nullable": True,
                        },
                        "key_expiry_days": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": notifications.MAX_EXPIRY_DAYS,
                            "nullable": True,
                        },
                    },
                }
            }
        },
    }
}
_PAGE = {
    "parameters": [
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 20},
        },
        {
            "name": "before_id",
            "in": "query",
            "required": False,
            "schema": {"type": "string", "maxLength": MAX_ID},
            "description": "deliveries older than this one (next_before_id)",
        },
    ]
}


admin_key = media_auth_with(Permission.MANAGE_NOTIFICATIONS)


def _view(found: notifications.NotificationSettings) -> dict[str, Any]:
    view = found.to_public()
    amount = view["balance_below_usd"]
    view["balance_below_usd"] = None if amount is None else str(amount)  # as the body sends it: exact
    return view


@router.get("", summary="The team's notification settings (admin keys only)")
async def get_settings(request: Request, auth: AuthContext = Depends(admin_key)) -> Response:
    return ok(_view(await notifications.load(get_services(request).db, auth.team_id)))


@router.put("", summary="Replace the team's notification settings (admin keys only)", openapi_extra=_BODY)
async def put_settings(request: Request, auth: AuthContext = Depends(admin_key)) -> Response:
    services = get_services(request)
    found = notifications.parse(await json_body(request))
    if found.url is not None:
        await check_url(services, found.url)
    actor = request_actor(request, "team_key", key_id=auth.key_id)
    await notifications.store(services.db, auth.team_id, found, actor)
    return ok(_view(found))


@router.post("/test", summary="Send a notification.test event to the team's URL (admin keys only)")
async def send_test(request: Request, auth: AuthContext = Depends(admin_key)) -> Response:
    # Each test is a signed POST to the team's URL: counted against the team's query rate limit, and one at
    # a time (notify.send_test), so a key cannot turn the service into a request cannon.
    rate_headers = await enforce_query_limit(request, auth)
    delivery_id = await notify.send_test(get_services(request).db, auth.team_id)
    response = ok({"webhook_id": delivery_id, "event_type": "notification.test"})
    response.headers.update(rate_headers)
    return response


@router.get("/deliveries", summary="The team's notification deliveries and their attempts", openapi_extra=_PAGE)
async def deliveries(request: Request, auth: AuthContext = Depends(admin_key)) -> Response:
    q = request.query_params
    limit = query_int(q.get("limit"), "limit", low=1, high=MAX_PAGE, default=20)
    assert limit is not None
    before = q.get("before_id") or None
    if before is not None and len(before) > MAX_ID:
        raise InvalidParameters(f"before_id is at most {MAX_ID} characters", param="before_id")
    items = await outbox.for_team(get_services(request).db, auth.team_id, "notification", limit=limit, before_id=before)
    return ok({"deliveries": items, "next_before_id": items[-1]["webhook_id"] if len(items) == limit else None})


async def check_url(services: Services, url: str) -> None:
    """As a task's webhook URL at creation: https, no userinfo, a public address (400 now, not at delivery)."""
    try:
        await services[FETCHER].check_resolved(url)
    except UrlFormatRefused as exc:
        raise InvalidFormat("url must be an https URL without userinfo", param="url") from exc
    except FetchError as exc:
        raise InvalidParameters(f"url cannot be used: {exc.detail}", param="url") from exc
