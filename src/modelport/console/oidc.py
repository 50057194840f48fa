"""Single sign-on pages: `GET /console/oidc/start` sends the browser to the provider, `GET
/console/oidc/callback` (`{MODELPORT_PUBLIC_MEDIA_URL}/console/oidc/callback`, the redirect URI to register)
finishes, `POST /console/profile/link-sso` links the provider to the signed-in person (the same flow, in
link mode). The account rules are `accounts.sso`'s; the provider client is `oidc_provider.OidcProvider`.

The flow's `state`, `nonce` and PKCE verifier live in the console's signed, HttpOnly session cookie (so the
callback is bound to the browser that started it), for `FLOW_MS` and for one callback: it is taken out
before anything is checked, so a second callback with the same state (a replay) finds none. A failure ends
on the sign-in page (link mode: the profile page) with a message a person can read, and is audited.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts import credentials, sso
from modelport.accounts.audit import Actor
from modelport.accounts.sso import ProviderClaims, SsoRefused
from modelport.clock import now_ms
from modelport.console.deps import SignInRequired, person
from modelport.console.oidc_provider import OidcProvider, ProviderRefused
from modelport.console.profile import FLASH, PERSON_ONLY
from modelport.console.sessions import KEY_ID, start_person_session
from modelport.console.signin import OPERATOR_HOME, person_actor, safe_next, sign_in_context
from modelport.console.templating import console_root, render
from modelport.errors import Forbidden, NotFound
from modelport.web.deps import get_services

router = APIRouter()
log = logging.getLogger(__name__)

START = "/oidc/start"
CALLBACK = "/oidc/callback"
LINK = "/profile/link-sso"
FLOW = "oidc_flow"
FLOW_MS = 10 * 60 * 1000


def provider_of(request: Request) -> OidcProvider:
    found = getattr(request.app.state, "oidc", None)
    if not isinstance(found, OidcProvider):
        raise NotFound("single sign-on is not configured")
    return found


def callback_url(public_media_url: str) -> str:
    return public_media_url.rstrip("/") + "/console" + CALLBACK


async def _send_to_provider(request: Request, flow: dict[str, Any]) -> Response:
    provider = provider_of(request)
    try:
        made = await provider.authorization()
    except ProviderRefused as refused:
        return await _refused(request, None, refused.reason, refused.message, link=flow["mode"] == "link")
    request.session[FLOW] = {**flow, **{k: made[k] for k in ("state", "nonce", "code_verifier")}, "at": now_ms()}
    return RedirectResponse(made["url"], status_code=302)


@router.get(START)
async def start(request: Request) -> Response:
    provider_of(request)
    next_path = safe_next(request.query_params.get("next"), "")
    return await _send_to_provider(request, {"mode": "sign_in", "next": next_path})


@router.post(LINK)
async def start_link(request: Request) -> Response:
    found = await person(request)
    if found is None:
        if request.session.get(KEY_ID):
            raise Forbidden(PERSON_ONLY)  # a key's session has no person to link
        raise SignInRequired("/sign-in")
    provider_of(request)
    return await _send_to_provider(request, {"mode": "link", "user_id": found.user_id, "next": ""})


async def _refused(
    request: Request, claims: ProviderClaims | None, reason: str, message: str, *, link: bool
) -> Response:
    services = get_services(request)
    email = claims.email if claims is not None else None
    user_id = request.session.get("user_id") if link else None
    actor = person_actor(request, user_id=user_id if isinstance(user_id, str) else None, email=email or "")
    await sso.record_refusal(services.db, claims, SsoRefused(reason, message), actor=actor)
    if link and isinstance(user_id, str):
        request.session[FLASH] = ["error", message]
        return RedirectResponse(console_root(request) + "/profile", status_code=303)
    context = {**sign_in_context(request, operator=False), "error": message}
    return render(request, "sign_in.html", context, status=401)


@router.get(CALLBACK)
async def callback(request: Request) -> Response:
    provider = provider_of(request)
    services = get_services(request)
    flow = request.session.pop(FLOW, None)  # one callback per flow, whatever happens next
    params = request.query_params
    link = isinstance(flow, dict) and flow.get("mode") == "link"
    display = provider.display
    state = params.get("state") or ""
    if not isinstance(flow, dict) or not secrets.compare_digest(str(flow.get("state", "")), state):
        message = f"This {display} sign-in was not started in this browser, or was used already: start again."
        return await _refused(request, None, "state", message, link=link)
    if now_ms() - int(flow.get("at", 0)) > FLOW_MS:
        return await _refused(request, None, "flow_expired", "This sign-in took too long: start again.", link=link)
    if params.get("error"):
        error = params["error"]
        message = (
            f"{display} did not sign you in ({error}): start again."
            if error != "access_denied"
            else f"The sign-in was cancelled at {display}."
        )
        return await _refused(request, None, f"provider_{error}"[:40], message, link=link)
    code = params.get("code")
    if not code:
        return await _refused(request, None, "no_code", f"{display} answered without a code: start again.", link=link)
    try:
        raw = await provider.finish(code, nonce=str(flow["nonce"]), code_verifier=str(flow["code_verifier"]))
    except ProviderRefused as refused:
        return await _refused(request, None, refused.reason, refused.message, link=link)
    except Exception as exc:  # anything else the provider's answer caused: still a page a person can read
        log.warning("OIDC callback failed: %s", type(exc).__name__)
        return await _refused(request, None, "provider_error", f"{display}'s answer could not be used.", link=link)
    claims = sso.claims_from(provider.issuer, raw, provider.settings.groups_claim)
    actor = person_actor(request, user_id=None, email=claims.email or "")
    try:
        if link:
            found = await person(request)
            if found is None or found.user_id != flow.get("user_id"):
                raise SignInRequired("/sign-in")
            await sso.link(services.db, provider.settings, found.user_id, claims, actor=actor)
            request.session[FLASH] = ["notice", f"{display} is linked: you can sign in with it."]
            return RedirectResponse(console_root(request) + "/profile", status_code=303)
        user = await sso.sign_in(services.db, provider.settings, claims, actor=actor)
    except SsoRefused as refused:
        return await _refused(request, claims, refused.reason, refused.message, link=link)
    team_id = user.teams[0][0] if user.teams else None
    await start_person_session(request, services, user.id, team_id)
    signed = Actor("user", None, actor.request_id, actor.client, user.id, user.email)
    await credentials.signed_in(services.db, user, signed, method="oidc")
    home = "/" if user.teams or user.operator_role is None else OPERATOR_HOME
    return RedirectResponse(console_root(request) + safe_next(flow.get("next"), home), status_code=303)
