"""Rendering console pages: one Jinja2 environment over `templates/`, autoescaped.

Templates get `request`, `auth` (the signed-in team, if any), `url(path)` (a console-relative path made
absolute under the mount point), `static(path)`, `csrf_field()` and `csrf_token()`, the status enums
(`TaskStatus`, `RequestStatus`, `DeliveryStatus`, `AttemptOutcome`), and the filters
`usd` (micro-USD), `when` (UNIX ms as UTC) and `num` (thousands separators).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse

from modelport.accounts.permissions import Permission, allows
from modelport.console.csrf import FIELD, csrf_token
from modelport.media.tasks.states import TaskStatus
from modelport.requestlog.record import RequestStatus
from modelport.webhooks.states import AttemptOutcome, DeliveryStatus

_env = Environment(
    loader=PackageLoader("modelport.console", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,  # a typo in a template is an error in the tests, not a blank on the page
    trim_blocks=True,
    lstrip_blocks=True,
)


def console_root(request: Request) -> str:
    """The path the console is mounted at (`/console`), from the ASGI scope."""
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")


def usd(micros: int | None, places: int = 6) -> str:
    if micros is None:
        return "-"
    value = Decimal(micros).scaleb(-6).quantize(Decimal(1).scaleb(-places))
    return f"${value:,}" if value >= 0 else f"-${-value:,}"


def when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def day(number: int) -> str:
    """A UTC day number (days since 1970-01-01) as YYYY-MM-DD."""
    return datetime.fromtimestamp(number * 86_400, UTC).strftime("%Y-%m-%d")


def usd_plain(micros: int) -> str:
    """Exact USD with 6 decimals, no symbol or separators (CSV cells)."""
    return str(Decimal(micros).scaleb(-6).quantize(Decimal("0.000001")))


def num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


_env.filters.update(usd=usd, when=when, num=num, day=day)

# The team console's navigation: (console path, label, the `active` key a page sets, the permission its page
# needs: a link a session's key may not follow is not shown).
TEAM_NAV: tuple[tuple[str, str, str, Permission | None], ...] = (
    ("/", "Overview", "overview", None),
    ("/keys", "API keys", "keys", Permission.MANAGE_OWN_KEYS),
    ("/usage", "Usage", "usage", None),
    ("/logs", "Request logs", "logs", None),
    ("/tasks", "Tasks", "tasks", None),
    ("/assets", "Assets", "assets", Permission.USE_MEDIA),
    ("/billing", "Billing", "billing", None),
    ("/webhooks", "Webhook secret", "webhooks", Permission.USE_MEDIA),
    ("/members", "Members", "members", Permission.VIEW),
    ("/notifications", "Notifications", "notifications", Permission.MANAGE_NOTIFICATIONS),
    ("/audit", "Audit log", "audit", Permission.READ_AUDIT),
)


def nav_allows(auth: Any, needs: Permission | None) -> bool:
    """Whether the session may open a page needing `needs` (a key's session has no keys of its own)."""
    if needs is None:
        return True
    if needs is Permission.MANAGE_OWN_KEYS and auth.user_id is None:
        needs = Permission.MANAGE_KEYS
    return allows(auth.team_role, needs)


_env.globals.update(team_nav=TEAM_NAV, allows=allows, nav_allows=nav_allows)
# The status enums, so templates compare with `TaskStatus.SUCCESS` rather than a spelled-out string.
_env.globals.update(
    TaskStatus=TaskStatus, RequestStatus=RequestStatus, DeliveryStatus=DeliveryStatus, AttemptOutcome=AttemptOutcome
)


def _context(request: Request, context: dict[str, Any] | None) -> dict[str, Any]:
    root = console_root(request)
    values: dict[str, Any] = {
        "request": request,
        "auth": getattr(request.state, "auth", None),
        "url": lambda path="/": root + (path if path.startswith("/") else "/" + path),
        "static": lambda path: f"{root}/static/{path}",
        "csrf_token": lambda: csrf_token(request),
        "csrf_field": lambda: Markup('<input type="hidden" name="{}" value="{}">').format(FIELD, csrf_token(request)),
        "active": "",
        "title": "",
    }
    values.update(context or {})
    return values


def render_fragment(request: Request, template: str, context: dict[str, Any] | None = None) -> str:
    """A template's HTML as text (htmx fragments, server-sent events)."""
    return _env.get_template(template).render(_context(request, context))


def render(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    html = render_fragment(request, template, context)
    return HTMLResponse(html, status_code=status, headers=headers)
