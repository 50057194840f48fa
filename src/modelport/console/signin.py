"""Signing in and out: a team with one of its API keys, an operator with `MODELPORT_ADMIN_TOKEN`."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.clock import now_ms
from modelport.console.deps import OPERATOR_SIGN_IN, TEAM_SIGN_IN, operator_console_enabled
from modelport.console.sessions import (
    KEY_ID,
    OPERATOR,
    count_failed_sign_in,
    end_session,
    start_operator_session,
    start_team_session,
)
from modelport.console.templating import console_root, render
from modelport.errors import NotFound, RateLimited
from modelport.web.deps import admin_token_matches, client_host, get_services

router = APIRouter()

OPERATOR_HOME = "/admin/"


def safe_next(raw: object, default: str) -> str:
    """Where to go after signing in: a console-relative path only (never another site)."""
    if isinstance(raw, str) and raw.startswith("/") and not raw.startswith("//") and "\\" not in raw:
        return raw
    return default


def _form_value(form: object, name: str) -> str:
    value = form.get(name) if hasattr(form, "get") else None
    return value.strip() if isinstance(value, str) else ""


@router.get("/sign-in")
async def team_sign_in_page(request: Request) -> Response:
    if request.session.get(KEY_ID):
        return RedirectResponse(console_root(request) + safe_next(request.query_params.get("next"), "/"), 303)
    return render(request, "sign_in.html", _sign_in_context(request, operator=False))


@router.post("/sign-in")
async def team_sign_in(request: Request) -> Response:
    services = get_services(request)
    form = await request.form()
    context = _sign_in_context(request, operator=False, next_path=_form_value(form, "next"))
    key = _form_value(form, "api_key")
    resolved = await services.auth.resolve(key)
    auth = resolved.context
    if auth is not None and auth.limits is not None and auth.refusal(now_ms(), client_host(request)):
        auth = None  # expired, or not from its allowed addresses: refused like an unknown key
    if auth is None:
        if resolved.suspended:
            error = "That key's team is suspended: ask the service's operator."
            return render(request, "sign_in.html", {**context, "error": error}, status=401)
        # Checked first, counted after: a correct key is never refused by the limit (see sessions.py).
        limited = await count_failed_sign_in(request, services, key)
        if limited is not None:
            page = {**context, "error": limited.detail}
            return render(request, "sign_in.html", page, status=429, headers=limited.headers)
        error = "That key was not accepted: it is unknown or has been revoked."
        return render(request, "sign_in.html", {**context, "error": error}, status=401)
    await start_team_session(request, services, auth.team_id, auth.key_id)
    return RedirectResponse(console_root(request) + safe_next(context["next_path"], "/"), status_code=303)


@router.get(OPERATOR_SIGN_IN)
async def operator_sign_in_page(request: Request) -> Response:
    if not operator_console_enabled(request):
        raise NotFound("no page")
    return render(request, "sign_in.html", _sign_in_context(request, operator=True))


@router.post(OPERATOR_SIGN_IN)
async def operator_sign_in(request: Request) -> Response:
    if not operator_console_enabled(request):
        raise NotFound("no page")
    services = get_services(request)
    form = await request.form()
    context = _sign_in_context(request, operator=True, next_path=_form_value(form, "next"))
    try:
        accepted = await admin_token_matches(request, _form_value(form, "admin_token"))
    except RateLimited as exc:  # the admin API's count of failures from this address, shared
        return render(request, "sign_in.html", {**context, "error": exc.detail}, status=429, headers=exc.headers)
    if not accepted:
        return render(request, "sign_in.html", {**context, "error": "That admin token was not accepted."}, status=401)
    await start_operator_session(request, services)
    return RedirectResponse(console_root(request) + safe_next(context["next_path"], OPERATOR_HOME), status_code=303)


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    operator = OPERATOR in request.session
    await end_session(request, get_services(request))
    return RedirectResponse(console_root(request) + (OPERATOR_SIGN_IN if operator else TEAM_SIGN_IN), status_code=303)


def _sign_in_context(request: Request, *, operator: bool, next_path: str | None = None) -> dict[str, object]:
    raw_next = next_path if next_path is not None else request.query_params.get("next", "")
    return {
        "title": "Operator sign-in" if operator else "Sign in",
        "operator": operator,
        "next_path": safe_next(raw_next, ""),
        "error": None,
    }
