"""Fuzzing the console's forms through a real `modelport serve` (issue 21: the fuzzing in the suite covers
them too), the way `tests/integration/gateway/test_fuzz_openapi.py` and `test_fuzz_protocol_bodies.py` do
for the API.

- schemathesis: the console has no OpenAPI document of its own (it is HTML), so the test writes one for
  its POST forms (fields as the pages send them, urlencoded) and fuzzes every operation, positive and
  negative, signed in as a team or as the operator with a valid CSRF header. Every answer must be a
  documented status, never a 5xx, and an HTML page when it has a body.
- hypothesis, structure-aware: bodies built from what a hostile client varies (content type, length
  header or chunked, size around the caps, percent-encoding, odd field names and values, duplicated and
  missing CSRF fields). A body of another type is a 415, one over the cap a 413, nothing is a 5xx, and
  the service keeps answering.

The example count is bounded for CI (MODELPORT_FUZZ_EXAMPLES, as the other fuzzers).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

from tests.integration.console.conftest import ADMIN_TOKEN, ConsoleServer
from tests.support.console import ConsoleClient, csrf_of
from tests.support.odd_numbers import number_like

EXAMPLES = int(os.environ.get("MODELPORT_FUZZ_EXAMPLES", "15"))
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)
SIGN_IN_CAP = 4096
FORM_CAP = 64 * 1024

KEY_FORM = ["name", "spend_limit", "period", "models", "rpm", "tpm", "expires", "allow_ip", "role"]
# Every POST form of the console: path -> fields (all text, as a browser sends them).
TEAM_FORMS: dict[str, list[str]] = {
    "/sign-in": ["api_key", "next"],
    "/keys": KEY_FORM,
    "/keys/{key_id}/edit": KEY_FORM,
    "/keys/{key_id}/revoke": [],
    "/webhooks/reveal": [],
    "/webhooks/rotate": [],
    "/notifications": ["url", "balance_below_usd", "key_spend_percent", "key_expiry_days"],
    "/notifications/test": [],
}
OPERATOR_FORMS: dict[str, list[str]] = {
    "/admin/sign-in": ["admin_token", "next"],
    "/admin/teams": ["name"],
    "/admin/teams/{team_id}/topup": ["amount_usd", "note"],
    "/admin/teams/{team_id}/tier": ["tier"],
    "/admin/teams/{team_id}/flags": ["asset_service", "log_retention"],
    "/admin/teams/{team_id}/log-days": ["log_days"],
    "/admin/teams/{team_id}/end-sessions": [],
    "/admin/teams/{team_id}/keys": KEY_FORM,
    "/admin/keys/{key_id}/edit": KEY_FORM,
    "/admin/keys": ["q"],
    "/admin/keys/{key_id}/revoke": [],
}
# Fields that take a number: any text, or digits among which non-ASCII ones (`²` passes `str.isdigit()`,
# `٣` and `９` pass `int()`), so the generated forms carry both.
NUMBER_FIELDS = {"rpm", "tpm", "expires", "spend_limit", "key_spend_percent", "key_expiry_days", "log_days"}
DIGITISH = {"type": "string", "pattern": "^-?[0-9²³¹٣９]{1,12}$"}
STATUSES = ("200", "201", "303", "400", "401", "403", "404", "413", "415", "429")
HTML = {"text/html": {"schema": {"type": "string"}}}


def console_document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for path, fields in {**TEAM_FORMS, **OPERATOR_FORMS}.items():
        params = [
            {"name": name[1:-1], "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
            for name in path.split("/")
            if name.startswith("{")
        ]
        properties = {
            f: {"anyOf": [{"type": "string"}, DIGITISH]} if f in NUMBER_FIELDS else {"type": "string"} for f in fields
        }
        body = {"type": "object", "properties": properties, "additionalProperties": False}
        responses = {s: {"description": s, **({} if s == "303" else {"content": HTML})} for s in STATUSES}
        paths[path] = {
            "post": {
                "parameters": params,
                "requestBody": {"required": True, "content": {"application/x-www-form-urlencoded": {"schema": body}}},
                "responses": responses,
            }
        }
    return {"openapi": "3.0.3", "info": {"title": "console forms", "version": "1"}, "paths": paths}


@pytest.fixture(scope="module")
def sessions(console_server: ConsoleServer) -> Iterator[dict[str, tuple[str, str]]]:
    """A team's and the operator's session: (cookie, CSRF token) each."""
    console_server.team("fuzz-forms")
    boss = console_server.admin("POST", "/teams/fuzz-forms/keys", json={"name": "boss", "role": "admin"})
    as_team, as_operator = ConsoleClient(console_server.media_url), ConsoleClient(console_server.media_url)
    assert as_team.sign_in(boss.json()["data"]["key"]).status_code == 303  # a key that may use every form
    assert as_operator.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
    yield {
        "team": (as_team.http.cookies["modelport_console"], csrf_of(as_team.get("/keys").text)),
        "operator": (as_operator.http.cookies["modelport_console"], csrf_of(as_operator.get("/admin/").text)),
    }
    as_team.close()
    as_operator.close()


def test_console_forms_schemathesis(console_server: ConsoleServer, sessions: dict[str, tuple[str, str]]) -> None:
    schema = schemathesis.openapi.from_dict(console_document())
    base_url = console_server.media_url + "/console"
    checks = [not_a_server_error, status_code_conformance, content_type_conformance]
    seen: defaultdict[str, set[int]] = defaultdict(set)
    failures: list[str] = []

    def fuzzer(operation: Any, cookie: str, token: str) -> Any:
        @given(
            case=st.one_of(
                operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
            )
        )
        @FUZZ_SETTINGS
        def run(case: Any) -> None:
            response = case.call_and_validate(
                base_url=base_url,
                headers={"X-CSRF-Token": token},
                cookies={"modelport_console": cookie},
                checks=checks,
                timeout=30,
                allow_redirects=False,
            )
            seen[f"POST {case.path}"].add(response.status_code)

        return run

    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]
        who = "operator" if operation.path.startswith("/admin/") else "team"
        try:
            fuzzer(operation, *sessions[who])()
        except BaseException as exc:  # every form is fuzzed; all failures are reported together
            if isinstance(exc, KeyboardInterrupt):
                raise
            failures.append(f"POST {operation.path}: {str(exc)[:1500]}")
    print({op: sorted(s) for op, s in seen.items()})
    assert len(seen) == len(TEAM_FORMS) + len(OPERATOR_FORMS), sorted(seen)
    assert not failures, "\n\n".join(failures)
    # The sessions the fuzzer used are still good: no form answer ended them by accident.
    for who, page in (("team", "/keys"), ("operator", "/admin/")):
        assert httpx.get(base_url + page, cookies={"modelport_console": sessions[who][0]}).status_code == 200


odd_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        ["", "\x00", "%", "%zz", "%00", "a=b", "&&", "😀", "\ud800".encode("utf-8", "surrogatepass").hex()]
    ),
    st.integers(min_value=1, max_value=6000).map(lambda n: "x" * n),
)
CONTENT_TYPES = [
    "application/x-www-form-urlencoded",
    "application/x-www-form-urlencoded; charset=utf-8",
    "APPLICATION/X-WWW-FORM-URLENCODED",
    "multipart/form-data; boundary=b",
    "application/json",
    "text/plain",
    "",
]


@st.composite
def form_requests(draw: st.DrawFn) -> dict[str, Any]:
    fields = draw(st.lists(st.tuples(odd_text, odd_text), max_size=6))
    csrf = draw(st.sampled_from(["valid", "missing", "forged", "twice"]))
    raw = draw(st.booleans())  # hand-made percent-encoding (possibly broken) or a proper one
    if raw:
        body = "&".join(f"{k}={v}" for k, v in fields)
    else:
        body = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in fields)
    return {
        "path": draw(st.sampled_from(["/sign-in", "/keys", "/admin/sign-in", "/admin/teams", "/admin/keys"])),
        "content_type": draw(st.sampled_from(CONTENT_TYPES)),
        "body": body.encode("utf-8", "surrogatepass"),
        "csrf": csrf,
        "chunked": draw(st.booleans()),
        "padding": draw(st.sampled_from([0, 0, SIGN_IN_CAP, FORM_CAP])),
    }


def test_console_form_bodies_structure_aware(
    console_server: ConsoleServer, sessions: dict[str, tuple[str, str]]
) -> None:
    base_url = console_server.media_url + "/console"

    @given(request=form_requests())
    @FUZZ_SETTINGS
    def run(request: dict[str, Any]) -> None:
        cookie, token = sessions["operator" if request["path"].startswith("/admin/") else "team"]
        body: bytes = request["body"]
        if request["csrf"] in ("valid", "twice"):
            body += f"&csrf_token={token}".encode()
        if request["csrf"] == "twice" or request["csrf"] == "forged":
            body += b"&csrf_token=forged"
        body += b"&pad=" + b"p" * request["padding"]
        headers = {"Cookie": f"modelport_console={cookie}"}
        if request["content_type"]:
            headers["Content-Type"] = request["content_type"]
        content: bytes | Iterator[bytes] = body
        if request["chunked"]:
            content = iter([body[i : i + 1000] for i in range(0, len(body), 1000)])
        response = httpx.post(base_url + request["path"], content=content, headers=headers, timeout=30)
        assert response.status_code < 500, (response.status_code, response.text[:300])
        if response.status_code != 303:
            assert response.headers["content-type"].startswith("text/html"), response.headers
        media_type = request["content_type"].partition(";")[0].strip().lower()
        cap = SIGN_IN_CAP if request["path"] in ("/sign-in", "/admin/sign-in") else FORM_CAP
        if media_type != "application/x-www-form-urlencoded":
            assert response.status_code == 415
        elif len(body) > cap:
            assert response.status_code == 413

    run()
    assert httpx.get(base_url + "/sign-in").status_code == 200


def test_a_console_url_holding_a_newline_is_answered_by_the_console(console_server: ConsoleServer) -> None:
    """What the schemathesis run found: `%0A` in a console path fell through to the media host's JSON 404."""
    for method, path in (("GET", "/console/a%0Ab"), ("POST", "/console/keys/a%0Ab/revoke")):
        response = httpx.request(method, console_server.media_url + path, timeout=30)
        assert response.status_code in (403, 404) and response.headers["content-type"].startswith("text/html")


def test_console_number_fields_never_get_a_5xx(
    console_server: ConsoleServer, sessions: dict[str, tuple[str, str]]
) -> None:
    """Every number a form takes, in every spelling (issue 33 item 5: `rpm=²` was a 500): the key forms of both
    consoles (create and edit), the notification settings and a team's log days. A 400 page or the operator
    console's redirect with its message, never a 5xx."""
    base_url = console_server.media_url + "/console"
    team_id = console_server.admin("GET", "/teams/fuzz-forms").json()["data"]["id"]
    keys = console_server.admin("GET", "/teams/fuzz-forms/keys").json()["data"]["keys"]
    key_id = next(k["id"] for k in keys if k["name"] == "first")  # not the session's own key
    forms = [
        ("team", "/keys", ["rpm", "tpm", "expires"]),
        ("team", f"/keys/{key_id}/edit", ["rpm", "tpm", "expires"]),
        ("team", "/notifications", ["key_spend_percent", "key_expiry_days"]),
        ("operator", f"/admin/teams/{team_id}/keys", ["rpm", "tpm", "expires"]),
        ("operator", f"/admin/keys/{key_id}/edit", ["rpm", "tpm", "expires"]),
        ("operator", f"/admin/teams/{team_id}/log-days", ["log_days"]),
    ]

    @given(value=number_like)
    @example("²")
    @example("٣")
    @example("1²")
    @FUZZ_SETTINGS
    def run(value: str) -> None:
        for who, path, fields in forms:
            cookie, token = sessions[who]
            for field in fields:
                data = {"csrf_token": token, "role": "member", "period": "month", field: value}
                response = httpx.post(base_url + path, data=data, cookies={"modelport_console": cookie}, timeout=30)
                where = (path, field, value, response.status_code, response.text[:300])
                assert response.status_code in (200, 201, 303, 400), where
                if response.status_code != 303:
                    assert response.headers["content-type"].startswith("text/html"), where

    run()
    for who, page in (("team", "/keys"), ("operator", "/admin/")):
        assert httpx.get(base_url + page, cookies={"modelport_console": sessions[who][0]}).status_code == 200
