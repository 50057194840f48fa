"""What every operator page shares: its navigation, flash messages, redirects, the operator services."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from modelport.accounts.audit import Actor
from modelport.console.templating import console_root, render
from modelport.operator.people import People
from modelport.operator.verbs import Operator
from modelport.web.actor import request_actor
from modelport.web.deps import get_services

# (console path, label, the `active` key a page sets)
OPERATOR_NAV = (
    ("/admin/", "Teams", "teams"),
    ("/admin/keys", "Keys", "keys"),
    ("/admin/models", "Models and prices", "models"),
    ("/admin/upstreams", "Upstreams", "upstreams"),
    ("/admin/logs", "Request logs", "logs"),
    ("/admin/tasks", "Tasks", "tasks"),
    ("/admin/queue", "Queue and workers", "queue"),
    ("/admin/retention", "Retention", "retention"),
    ("/admin/audit", "Audit log", "audit"),
    ("/admin/users", "Users", "users"),
)
_FLASH = "flash"
MASK = "••••••"  # what the pages show instead of a credential


def masked_url(url: str | None) -> str:
    """A URL without its credentials: userinfo and query values become MASK."""
    if not url:
        return "-"
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{p.split('=', 1)[0]}={MASK}" for p in parts.query.split("&") if p) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def operator_actor(request: Request) -> Actor:
    """An operator account acts as itself (`user`); an admin-token session as `operator_console`."""
    found = getattr(request.state, "person", None)
    base = request_actor(request, "operator_console")
    if found is None:
        return base
    return Actor("user", None, base.request_id, base.client, found.user_id, found.email)


def operator(request: Request) -> Operator:
    """The one service every operator action goes through (the admin API and CLI call it too)."""
    return Operator.for_services(get_services(request), operator_actor(request))


def people(request: Request) -> People:
    """Users, members and invitations, through the service the admin API's people routes and the CLI call."""
    return People.for_services(get_services(request), operator_actor(request))


def may_change(request: Request) -> bool:
    """Whether this session may act (an `operator_viewer` may only read): pages offer their forms only then."""
    return getattr(request.state, "operator_role", "operator") == "operator"


def flash(request: Request, text: str, *, error: bool = False) -> None:
    """A message for the next page this session loads (after a POST's redirect)."""
    request.session[_FLASH] = {"kind": "error" if error else "notice", "text": text}


def page(request: Request, template: str, context: dict[str, Any], *, status: int = 200) -> HTMLResponse:
    shown = request.session.pop(_FLASH, None)
    values = {
        "operator_nav": OPERATOR_NAV,
        "flash": shown if isinstance(shown, dict) else None,
        "may_change": may_change(request),
        **context,
    }
    return render(request, template, values, status=status)


def back(request: Request, path: str) -> RedirectResponse:
    return RedirectResponse(console_root(request) + path, status_code=303)


async def form_fields(request: Request) -> dict[str, str]:
    form = await request.form()
    return {k: v.strip() for k, v in form.items() if isinstance(v, str)}
