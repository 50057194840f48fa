"""Team notifications (`/console/notifications`): the settings form, a test event and the latest deliveries
with their attempts. Sessions signed in with an admin key only, as on the API (`team_admin.notifications`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts import notifications
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission, check_permission
from modelport.billing import notify
from modelport.console.deps import console_actor, require_team
from modelport.console.templating import render
from modelport.errors import InvalidParameters
from modelport.team_admin.notifications import check_url
from modelport.web.deps import get_services
from modelport.web.query_int import plain_int
from modelport.web.query_limit import enforce_query_limit
from modelport.webhooks import outbox

router = APIRouter()
SHOWN_DELIVERIES = 20
MAX_FIELD = 2048


def _admin(auth: AuthContext) -> None:
    check_permission(auth, Permission.MANAGE_NOTIFICATIONS)


async def _page(request: Request, auth: AuthContext, *, notice: str | None = None) -> Response:
    engine = get_services(request).db
    found = await notifications.load(engine, auth.team_id)
    view = found.to_public()
    context = {
        "title": "Notifications",
        "active": "notifications",
        "form": {
            "url": view["url"] or "",
            "balance_below_usd": "" if view["balance_below_usd"] is None else str(view["balance_below_usd"]),
            "key_spend_percent": ", ".join(str(p) for p in found.key_spend_percent),
            "key_expiry_days": "" if found.key_expiry_days is None else str(found.key_expiry_days),
        },
        "has_url": found.url is not None,
        "deliveries": await outbox.for_team(engine, auth.team_id, "notification", limit=SHOWN_DELIVERIES),
        "notice": notice,
    }
    return render(request, "team/notifications.html", context)


@router.get("/notifications")
async def notifications_page(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    _admin(auth)
    return await _page(request, auth)


@router.post("/notifications")
async def save(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    _admin(auth)
    services = get_services(request)
    found = notifications.parse(body_from_form(await _form(request)))
    if found.url is not None:
        await check_url(services, found.url)
    actor = console_actor(request, auth)
    await notifications.store(services.db, auth.team_id, found, actor)
    return await _page(request, auth, notice="Settings saved.")


@router.post("/notifications/test")
async def send_test(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    _admin(auth)
    # As the API's test route: each test is a signed POST to the team's URL, so it counts against the team's
    # query rate limit (and notify.send_test allows one pending per team).
    await enforce_query_limit(request, auth)
    delivery_id = await notify.send_test(get_services(request).db, auth.team_id)
    return await _page(request, auth, notice=f"Test event {delivery_id} queued.")


async def _form(request: Request) -> dict[str, str]:
    form = await request.form()
    out: dict[str, str] = {}
    for name in notifications.FIELDS:
        value = form.get(name)
        text = value.strip() if isinstance(value, str) else ""
        if len(text) > MAX_FIELD:
            raise InvalidParameters(f"{name} is too long", param=name)
        out[name] = text
    return out


def body_from_form(form: dict[str, str]) -> dict[str, Any]:
    """The API body of the form's text boxes: an empty box is off; percents are comma-separated."""
    body: dict[str, Any] = {
        "url": form.get("url") or None,
        "balance_below_usd": form.get("balance_below_usd") or None,
        "key_spend_percent": None,
        "key_expiry_days": None,
    }
    percents = [p.strip() for p in (form.get("key_spend_percent") or "").split(",") if p.strip()]
    if percents:
        values = [plain_int(p) for p in percents]
        if any(v is None for v in values):
            raise InvalidParameters(
                "key_spend_percent: whole percents separated by commas, e.g. 80, 100", param="key_spend_percent"
            )
        body["key_spend_percent"] = values
    if form.get("key_expiry_days"):
        days = plain_int(form["key_expiry_days"])
        if days is None:
            raise InvalidParameters("key_expiry_days must be a whole number of days", param="key_expiry_days")
        body["key_expiry_days"] = days
    return body
