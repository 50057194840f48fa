"""Issue 33 item 1: a console session applies the API's permission rule on every page and form, through a real
`modelport serve`.

The test walks every route of the console app (read from the app's routers, so a route added later is walked
too) with a session signed in with a `role: member` key. A team route a member may use through the API is
answered; every other team route is refused with the API's 403 message, before it reads or changes
anything; operator routes send the team session to the operator sign-in. A new team route is refused to
members unless it is added to MEMBER_MAY, after checking that the API lets a member do the same.
"""

from __future__ import annotations

import html
import re

import httpx
from fastapi.routing import APIRoute

from modelport.console.app import console_routers
from modelport.console.operator import ROUTERS as OPERATOR_ROUTERS
from tests.integration.console.conftest import ConsoleServer
from tests.support.console import ConsoleClient, csrf_of

# Team routes whose API counterpart takes any key of the team (docs/api/*.md).
MEMBER_MAY = {
    ("GET", "/"),
    ("GET", "/usage"),
    ("GET", "/usage.csv"),
    ("GET", "/logs"),
    ("GET", "/logs.csv"),
    ("GET", "/logs/{request_id}"),
    ("GET", "/logs-tail"),
    ("GET", "/tasks"),
    ("GET", "/tasks/{task_id}"),
    ("POST", "/tasks/{task_id}/webhooks/{delivery_id}/redeliver"),
    ("GET", "/assets"),
    ("GET", "/billing"),
    ("GET", "/webhooks"),
    ("POST", "/webhooks/reveal"),
    ("POST", "/webhooks/rotate"),
    ("GET", "/members"),  # the list, read-only (its forms need manage_members)
}
ATTACKED = {("GET", "/keys"), ("POST", "/keys"), ("POST", "/keys/{key_id}/edit"), ("POST", "/keys/{key_id}/revoke")}
# Signing in and out need no session (sign-out would end the one the walk uses).
PUBLIC = {
    ("GET", "/sign-in"),
    ("POST", "/sign-in"),
    ("GET", "/admin/sign-in"),
    ("POST", "/admin/sign-in"),
    ("GET", "/sign-in/code"),
    ("POST", "/sign-in/code"),
    ("GET", "/oidc/start"),  # single sign-on (404 while it is not configured)
    ("GET", "/oidc/callback"),
    *((method, f"/{kind}/{{token}}") for kind in ("setup", "reset", "invite") for method in ("GET", "POST")),
}
# A person's own pages: a key's session has no person (403).
PERSON_ONLY_PREFIXES = ("/profile", "/switch-team")
SIGN_OUT = ("POST", "/sign-out")
# What a form may send: a key form that would demote the admin key, notification settings.
FORM = {
    "name": "made-by-member",
    "spend_limit": "",
    "period": "month",
    "models": "",
    "rpm": "1",
    "tpm": "",
    "expires": "",
    "allow_ip": "",
    "role": "member",
    "url": "",
    "balance_below_usd": "",
    "key_spend_percent": "",
    "key_expiry_days": "",
}


def console_routes() -> list[tuple[str, str]]:
    """(method, path) of every route of the console app as `apps.media` mounts it."""
    found = {
        (method, route.path)
        for router in console_routers(OPERATOR_ROUTERS)
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods or ()
        if method != "HEAD"
    }
    return sorted(found)


def request(client: ConsoleClient, method: str, path: str, token: str) -> httpx.Response:
    if path == "/logs-tail":  # a live stream: its status is what the walk needs
        with client.http.stream(method, path, timeout=30) as streamed:
            return httpx.Response(streamed.status_code, headers=streamed.headers)
    if method == "GET":
        return client.get(path)
    return client.http.request(method, path, data={**FORM, "csrf_token": token})


def test_a_member_session_gets_the_apis_refusal_on_every_console_route(console_server: ConsoleServer) -> None:
    team = console_server.team("perm-walk")
    made = console_server.admin("POST", "/teams/perm-walk/keys", json={"name": "boss", "role": "admin"})
    boss_id = made.json()["data"]["id"]
    member = console_server.admin("POST", "/teams/perm-walk/keys", json={"name": "plain"}).json()["data"]["key"]
    api_refusals = set()
    for path in ("/api/v1/keys", "/api/v1/audit", "/api/v1/notifications"):
        refused = httpx.get(console_server.media_url + path, headers={"Authorization": f"Bearer {member}"})
        assert refused.status_code == 403, (path, refused.text)
        api_refusals.add(refused.json()["message"].removeprefix("Forbidden: "))
    purge = httpx.delete(console_server.media_url + "/api/v1/cache", headers={"Authorization": f"Bearer {member}"})
    assert purge.status_code == 403, purge.text  # the response cache's purge (docs/api/cache.md)
    api_refusals.add(purge.json()["message"].removeprefix("Forbidden: "))
    routes = console_routes()
    assert SIGN_OUT in routes and set(routes) >= MEMBER_MAY, sorted(MEMBER_MAY - set(routes))
    client = ConsoleClient(console_server.media_url)
    try:
        assert client.sign_in(member).status_code == 303
        home = client.get("/")
        token = csrf_of(home.text)
        wrong = []  # every route answered otherwise than expected, reported together
        for method, pattern in routes:
            if (method, pattern) in PUBLIC or (method, pattern) == SIGN_OUT:
                continue
            # A key id is the admin key's (the attack's target); any other id names nothing.
            path = re.sub(r"\{[^}]+\}", "none", pattern.replace("{key_id}", boss_id))
            answer = request(client, method, path, token)
            if pattern.startswith(PERSON_ONLY_PREFIXES):
                expected = answer.status_code == 403
            elif pattern.startswith("/admin/"):
                expected = answer.status_code == 303 and answer.headers["location"].startswith("/console/admin/")
            elif (method, pattern) in MEMBER_MAY:
                expected = answer.status_code in (200, 404)
            else:  # refused as the API refuses the member, with its message
                page = html.unescape(answer.text)
                expected = answer.status_code == 403 and any(message in page for message in api_refusals)
            if not expected:
                wrong.append(f"{method} {pattern}: {answer.status_code}")
        assert not wrong, wrong
        assert set(routes) - MEMBER_MAY >= ATTACKED  # the attack's routes were walked and refused
        assert 'href="/console/keys"' not in client.get("/").text  # no link the session may not follow
    finally:
        client.close()
    keys = {k["name"]: k for k in console_server.admin("GET", "/teams/perm-walk/keys").json()["data"]["keys"]}
    assert set(keys) == {"first", "boss", "plain"}  # nothing created
    assert keys["boss"]["active"] and keys["boss"]["role"] == "admin" and keys["boss"]["rpm"] is None
    assert team.key_id in {k["id"] for k in keys.values()}
    # The same routes answer an admin key's session: the refusal is the permission, not the route.
    boss = ConsoleClient(console_server.media_url)
    try:
        boss_key = console_server.admin("POST", "/teams/perm-walk/keys", json={"role": "admin"}).json()["data"]["key"]
        assert boss.sign_in(boss_key).status_code == 303
        for path in ("/keys", "/audit", "/notifications"):
            assert boss.get(path).status_code == 200, path
    finally:
        boss.close()
