"""OpenID Connect sign-in through a real `modelport serve` and a real OpenID provider (issue 38):
Authorization Code with PKCE, state and nonce, through the provider's consent form; the linking rules;
groups that add and take back mapped memberships and operator roles across sign-ins; refusals that end on
the sign-in page in words (unverified email, a domain not allowed, a wrong or reused state); REQUIRE_SSO."""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.accounts import PASSWORD, admin, browser, close_browsers, set_password, sign_in
from tests.support.console import ConsoleClient
from tests.support.oidc import Provider, oidc_provider, sso_sign_in, to_provider
from tests.support.server import RunningServer, run_server

ADMIN = "oidc-admin-token-0123456789-abcdefghij"
MAPPINGS = '{"ai-team": [{"team": "acme", "role": "developer"}], "platform": [{"operator_role": "operator"}]}'


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


@pytest.fixture(scope="module")
def server(provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "MODELPORT_ADMIN_TOKEN": ADMIN,
        "MODELPORT_OIDC__ISSUER": provider.issuer,
        "MODELPORT_OIDC__CLIENT_ID": "modelport-console",
        "MODELPORT_OIDC__CLIENT_SECRET_ENV": "IDP_CLIENT_SECRET",
        "IDP_CLIENT_SECRET": secrets.token_urlsafe(24),
        "MODELPORT_OIDC__DISPLAY_NAME": "Acme SSO",
        "MODELPORT_OIDC__ALLOWED_EMAIL_DOMAINS": "acme.test, *.eu.acme.test",
        "MODELPORT_OIDC__AUTO_CREATE_USERS": "true",
        "MODELPORT_OIDC__ROLE_MAPPINGS": MAPPINGS,
        "MODELPORT_OIDC__REQUIRE_SSO": "true",
        "MODELPORT_ACCOUNTS__SIGN_IN_FAILURES": "1000",
        "AUTHLIB_INSECURE_TRANSPORT": "1",  # the test provider is plain http
    }
    with run_server(tmp_path_factory.mktemp("oidc"), env=env) as running:
        assert admin(running, ADMIN, "POST", "/teams", json={"name": "acme"}).status_code == 200
        assert admin(running, ADMIN, "POST", "/teams", json={"name": "by-hand"}).status_code == 200
        yield running
    close_browsers()


def person(server: RunningServer, email: str) -> dict[str, Any]:
    found = admin(server, ADMIN, "GET", "/users").json()["data"]["users"]
    matches = [u for u in found if u["email"].lower() == email.lower()]
    assert len(matches) == 1, found
    return dict(matches[0])


def team_id(server: RunningServer, name: str) -> str:
    teams = admin(server, ADMIN, "GET", "/teams").json()["data"]["teams"]
    return str(next(t["id"] for t in teams if t["name"] == name))


def error_of(answer: httpx.Response) -> str:
    found = re.search(r'<p class="error" role="alert">([^<]*)</p>', answer.text)
    assert found is not None, answer.text[:2000]
    return html.unescape(found.group(1))


def refused(answer: httpx.Response) -> str:
    assert answer.status_code == 401, answer.text[:500]
    assert "Sign in with Acme SSO" in answer.text  # back on the sign-in page, the button still there
    message = error_of(answer)
    assert "Traceback" not in answer.text and "eyJ" not in answer.text  # no stack trace, no token
    return message


def audit(server: RunningServer, action: str) -> list[dict[str, Any]]:
    answer = admin(server, ADMIN, "GET", "/audit", params={"action": action, "limit": 100})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["data"]["events"])


def signed_in(client: ConsoleClient, email: str) -> None:
    page = client.get("/profile")
    assert page.status_code == 200 and email in page.text, page.text[:500]


def test_the_sign_in_page_shows_the_button(server: RunningServer) -> None:
    page = browser(server).get("/sign-in")
    assert page.status_code == 200 and 'href="/console/oidc/start"' in page.text
    assert "Sign in with Acme SSO" in page.text


def test_a_first_sign_in_creates_the_person_and_a_session(server: RunningServer, provider: Provider) -> None:
    provider.set_user("sub-ada", {"email": "Ada@acme.test", "email_verified": True, "name": "Ada L", "groups": []})
    client = browser(server)
    answer = sso_sign_in(client, "sub-ada", next_path="/profile")
    assert answer.status_code == 303, answer.text[:500]
    assert answer.headers["location"] == "/console/profile"
    signed_in(client, "Ada@acme.test")
    ada = person(server, "ada@acme.test")
    assert ada["name"] == "Ada L" and ada["status"] == "active"
    sign_ins = [e for e in audit(server, "user.sign_in") if e["target"] == ada["id"]]
    assert sign_ins and sign_ins[0]["after"] == {"method": "oidc"} and sign_ins[0]["actor"]["kind"] == "user"
    links = [e for e in audit(server, "user.identity_link") if e["target"] == ada["id"]]
    assert links[0]["after"] == {"issuer": provider.issuer, "subject": "sub-ada"}
    again = browser(server)  # the same identity signs in as the same person
    assert sso_sign_in(again, "sub-ada").status_code == 303
    assert person(server, "ada@acme.test")["id"] == ada["id"]


def test_an_unverified_email_is_refused(server: RunningServer, provider: Provider) -> None:
    provider.set_user("sub-unverified", {"email": "una@acme.test", "email_verified": False})
    message = refused(sso_sign_in(browser(server), "sub-unverified"))
    assert message == "Acme SSO has not verified the email address una@acme.test, so it cannot sign you in here."
    users = admin(server, ADMIN, "GET", "/users").json()["data"]["users"]
    assert not [u for u in users if u["email"] == "una@acme.test"]
    reasons = [e["after"]["reason"] for e in audit(server, "user.sso_refused") if e["target"] == "una@acme.test"]
    assert reasons == ["email_unverified"]


def test_a_domain_not_allowed_is_refused_and_subdomains_match(server: RunningServer, provider: Provider) -> None:
    provider.set_user("sub-outsider", {"email": "eve@evil.test", "email_verified": True})
    message = refused(sso_sign_in(browser(server), "sub-outsider"))
    assert message == "Sign-in with Acme SSO is not open to evil.test addresses."
    provider.set_user("sub-lookalike", {"email": "eve@sub.acme.test", "email_verified": True})  # exact match only
    assert "not open to sub.acme.test" in refused(sso_sign_in(browser(server), "sub-lookalike"))
    provider.set_user("sub-eu", {"email": "eu@paris.eu.acme.test", "email_verified": True})  # *.eu.acme.test
    assert sso_sign_in(browser(server), "sub-eu").status_code == 303


def test_a_wrong_state_and_a_reused_state_are_refused(server: RunningServer, provider: Provider) -> None:
    provider.set_user("sub-state", {"email": "stan@acme.test", "email_verified": True})
    client = browser(server)
    returned = to_provider(client, client.get("/oidc/start"), "sub-state")
    forged = re.sub(r"state=[^&]+", "state=forged", returned.callback)
    assert "was not started in this browser, or was used already" in refused(client.http.get(forged))
    # The flow is spent by that callback: the genuine one now finds no flow either.
    assert "start again" in refused(client.http.get(returned.callback))

    other = browser(server)
    returned = to_provider(other, other.get("/oidc/start"), "sub-state")
    assert other.http.get(returned.callback).status_code == 303
    replay = browser(server)  # the same callback (code, state) in another browser: not its flow
    assert "was not started in this browser" in refused(replay.http.get(returned.callback))
    assert "was used already" in refused(other.http.get(returned.callback))  # and twice in the same one


def test_groups_add_and_take_back_mapped_memberships_across_sign_ins(server: RunningServer, provider: Provider) -> None:
    acme, by_hand = team_id(server, "acme"), team_id(server, "by-hand")
    claims: dict[str, Any] = {"email": "gus@acme.test", "email_verified": True, "groups": ["ai-team", "platform"]}
    provider.set_user("sub-gus", claims)
    assert sso_sign_in(browser(server), "sub-gus").status_code == 303
    gus = person(server, "gus@acme.test")
    assert gus["teams"] == [{"team_id": acme, "role": "developer"}] and gus["operator_role"] == "operator"
    added = admin(server, ADMIN, "POST", f"/teams/{by_hand}/members", json={"email": gus["email"], "role": "viewer"})
    assert added.status_code == 200, added.text

    provider.set_user("sub-gus", {**claims, "groups": ["other"]})
    assert sso_sign_in(browser(server), "sub-gus").status_code == 303
    gus = person(server, "gus@acme.test")
    assert gus["teams"] == [{"team_id": by_hand, "role": "viewer"}] and gus["operator_role"] is None

    provider.set_user("sub-gus", {**claims, "groups": ["ai-team"]})
    assert sso_sign_in(browser(server), "sub-gus").status_code == 303
    provider.set_user("sub-gus", {"email": "gus@acme.test", "email_verified": True})  # no groups claim at all
    assert sso_sign_in(browser(server), "sub-gus").status_code == 303
    teams = {t["team_id"]: t["role"] for t in person(server, "gus@acme.test")["teams"]}
    assert teams == {acme: "developer", by_hand: "viewer"}  # nothing taken back without the claim


def test_an_operator_made_account_links_and_a_password_account_does_not(
    server: RunningServer, provider: Provider
) -> None:
    made = admin(server, ADMIN, "POST", "/users", json={"email": "olga@acme.test"})
    assert made.status_code == 200, made.text
    provider.set_user("sub-olga", {"email": "OLGA@acme.test", "email_verified": True})
    assert sso_sign_in(browser(server), "sub-olga").status_code == 303
    assert person(server, "olga@acme.test")["id"] == made.json()["data"]["id"]

    # A password account (outside the SSO domains, so its password still works) is never linked silently.
    made = admin(server, ADMIN, "POST", "/users", json={"email": "pat@partner.test"})
    assert made.status_code == 200, made.text
    set_password(server, made.json()["data"]["setup_url"])
    provider.set_user("sub-pat", {"email": "pat@partner.test", "email_verified": True})
    message = refused(sso_sign_in(browser(server), "sub-pat"))
    assert message == (
        "An account with pat@partner.test already exists and has a password: sign in with it, then link Acme SSO"
        " from your profile page."
    )
    # Signed in with the password, the person links the provider from the profile page.
    client = sign_in(server, "pat@partner.test", PASSWORD)
    page = client.get("/profile")
    assert "Link Acme SSO" in page.text
    start = client.post_form("/profile/link-sso", {}, csrf_from="/profile")
    linked = client.http.get(to_provider(client, start, "sub-pat").callback)
    assert linked.status_code == 303 and linked.headers["location"] == "/console/profile"
    page = client.get("/profile")
    assert "Acme SSO is linked: you can sign in with it." in page.text and 'id="sso-linked"' in page.text
    fresh = browser(server)
    assert sso_sign_in(fresh, "sub-pat").status_code == 303
    signed_in(fresh, "pat@partner.test")


def test_require_sso_refuses_passwords_of_the_sso_domains(server: RunningServer) -> None:
    made = admin(server, ADMIN, "POST", "/users", json={"email": "sam@acme.test"})
    set_password(server, made.json()["data"]["setup_url"])
    answer = browser(server).post_form("/sign-in", {"email": "sam@acme.test", "password": PASSWORD})
    assert error_of(answer) == "Accounts of acme.test sign in with Acme SSO: use the button below."
    assert answer.status_code == 401
    operator = browser(server).post_form("/admin/sign-in", {"admin_token": ADMIN})  # break-glass stays
    assert operator.status_code == 303
