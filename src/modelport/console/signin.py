"""Signing in and out: a person by email and password (then their second factor), a team with one of its
API keys (unless `console.key_sign_in` is off), an operator with `MODELPORT_ADMIN_TOKEN`.

Single sign-on (`console/oidc.py`) shows its button here; with `MODELPORT_OIDC__REQUIRE_SSO` an email of
the allowed domains is refused a password sign-in (the admin token stays as break-glass).

Refusals never say whether an email has an account. Failures are counted after the check (per account and
per address for people: `sessions.count_failed_person_sign_in`), so a correct credential always gets in.
Every sign-in starts a new session id (`sessions._start`)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts import credentials
from modelport.accounts.audit import Actor
from modelport.accounts.totp_secrets import TOTP_SECRETS
from modelport.accounts.users import User, get_user
from modelport.clock import now_ms
from modelport.console.deps import OPERATOR_SIGN_IN, TEAM_SIGN_IN, operator_console_enabled
from modelport.console.sessions import (
    KEY_ID,
    OPERATOR,
    PENDING_AT,
    PENDING_USER,
    USER_ID,
    count_failed_person_sign_in,
    count_failed_sign_in,
    end_session,
    forget_session,
    start_operator_session,
    start_person_session,
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


CODE_PAGE = "/sign-in/code"
PENDING_MS = 5 * 60 * 1000  # the second factor is asked for within 5 minutes of the password
REFUSED = "That email and password were not accepted."


def _password(form: object, name: str) -> str:
    value = form.get(name) if hasattr(form, "get") else None
    return value if isinstance(value, str) else ""  # never stripped: spaces are part of a password


def person_actor(request: Request, *, user_id: str | None, email: str) -> Actor:
    client = client_host(request)
    return Actor(
        "user", request_id=request.scope.get("state", {}).get("request_id"), client=client, user_id=user_id, email=email
    )


async def _refused(request: Request, context: dict[str, object], email: str, message: str, page: str) -> Response:
    services = get_services(request)
    limited = await count_failed_person_sign_in(request, services, email)
    if limited is not None:
        return render(request, page, {**context, "error": limited.detail}, status=429, headers=limited.headers)
    await credentials.record_failed_sign_in(services.db, email, person_actor(request, user_id=None, email=email))
    return render(request, page, {**context, "error": message}, status=401)


async def _signed_in(request: Request, user: User, next_path: str) -> Response:
    services = get_services(request)
    team_id = user.teams[0][0] if user.teams else None
    await start_person_session(request, services, user.id, team_id)
    await credentials.signed_in(services.db, user, person_actor(request, user_id=user.id, email=user.email))
    home = "/" if user.teams or user.operator_role is None else OPERATOR_HOME
    return RedirectResponse(console_root(request) + safe_next(next_path, home), status_code=303)


async def person_sign_in(request: Request, form: object, context: dict[str, object]) -> Response:
    """Email and password; then the second factor's page when the account has one."""
    services = get_services(request)
    email = _form_value(form, "email")
    context = {**context, "email": email}
    oidc = services.settings.oidc
    if oidc.enabled and oidc.require_sso and oidc.domain_allowed(email):
        # Said for the domain, not the account: it tells nothing about whether the email has one.
        error = f"Accounts of {email.rpartition('@')[2]} sign in with {oidc.display_name}: use the button below."
        await credentials.record_failed_sign_in(services.db, email, person_actor(request, user_id=None, email=email))
        return render(request, "sign_in.html", {**context, "error": error}, status=401)
    user = await credentials.check_password(services.db, email, _password(form, "password"))
    if user is None:
        return await _refused(request, context, email, REFUSED, "sign_in.html")
    if user.totp_enabled:
        await end_session(request, services)
        request.session[PENDING_USER] = user.id
        request.session[PENDING_AT] = now_ms()
        target = CODE_PAGE + (f"?next={context['next_path']}" if context["next_path"] else "")
        return RedirectResponse(console_root(request) + target, status_code=303)
    return await _signed_in(request, user, str(context["next_path"]))


def _pending(request: Request) -> str | None:
    user_id, at = request.session.get(PENDING_USER), request.session.get(PENDING_AT)
    if not isinstance(user_id, str) or not isinstance(at, int) or now_ms() - at > PENDING_MS:
        return None
    return user_id


@router.get(CODE_PAGE)
async def code_page(request: Request) -> Response:
    if _pending(request) is None:
        return RedirectResponse(console_root(request) + TEAM_SIGN_IN, status_code=303)
    return render(request, "sign_in_code.html", sign_in_context(request, operator=False))


@router.post(CODE_PAGE)
async def code_sign_in(request: Request) -> Response:
    services = get_services(request)
    form = await request.form()
    context = sign_in_context(request, operator=False, next_path=_form_value(form, "next"))
    user_id = _pending(request)
    if user_id is None:
        forget_session(request)
        return RedirectResponse(console_root(request) + TEAM_SIGN_IN, status_code=303)
    user = await get_user(services.db, user_id)
    box = services.secret_box(TOTP_SECRETS)
    if not user.active or not await credentials.check_second_factor(
        services.db, box, user_id, _form_value(form, "code")
    ):
        return await _refused(request, context, user.email, "That code was not accepted.", "sign_in_code.html")
    return await _signed_in(request, user, str(context["next_path"]))


@router.get("/sign-in")
async def team_sign_in_page(request: Request) -> Response:
    if request.session.get(KEY_ID) or request.session.get(USER_ID):
        return RedirectResponse(console_root(request) + safe_next(request.query_params.get("next"), "/"), 303)
    return render(request, "sign_in.html", sign_in_context(request, operator=False))


@router.post("/sign-in")
async def team_sign_in(request: Request) -> Response:
    services = get_services(request)
    form = await request.form()
    context = sign_in_context(request, operator=False, next_path=_form_value(form, "next"))
    if _form_value(form, "email") or not services.settings.console.key_sign_in:
        return await person_sign_in(request, form, context)
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
    return render(request, "sign_in.html", sign_in_context(request, operator=True))


@router.post(OPERATOR_SIGN_IN)
async def operator_sign_in(request: Request) -> Response:
    if not operator_console_enabled(request):
        raise NotFound("no page")
    services = get_services(request)
    form = await request.form()
    context = sign_in_context(request, operator=True, next_path=_form_value(form, "next"))
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


def sign_in_context(request: Request, *, operator: bool, next_path: str | None = None) -> dict[str, object]:
    raw_next = next_path if next_path is not None else request.query_params.get("next", "")
    return {
        "title": "Operator sign-in" if operator else "Sign in",
        "operator": operator,
        "next_path": safe_next(raw_next, ""),
        "error": None,
        "key_sign_in": get_services(request).settings.console.key_sign_in,
        "email": "",
        # The "Sign in with ..." button (single sign-on configured), linking /oidc/start.
        "sso": oidc.display_name if (oidc := get_services(request).settings.oidc).enabled else None,
    }
