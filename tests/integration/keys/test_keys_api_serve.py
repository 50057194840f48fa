"""The team keys API on the media host through a real `modelport serve` (SQLite and PostgreSQL): admin keys
list, create, show, change and revoke their team's keys; member keys get 403; no key gives more than it has."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.integration.keys.helpers import bearer, keys_server, new_key, new_team
from tests.support.databases import BACKENDS, migrated_database_url
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer

FORBIDDEN = {"code": 403, "message": "Forbidden: your role in this team does not allow this"}


@pytest.fixture(scope="module", params=BACKENDS)
async def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    tmp = tmp_path_factory.mktemp(f"keys-api-{request.param}")
    with FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as upstream:
        async with migrated_database_url(request.param, tmp) as db_url:
            with keys_server(tmp, upstream, db_url) as running:
                yield running


def call(srv: RunningServer, key: str, method: str, path: str = "", **kw: object) -> httpx.Response:
    return httpx.request(method, srv.media_url + "/api/v1/keys" + path, headers=bearer(key), timeout=30, **kw)  # type: ignore[arg-type]


def test_a_member_key_cannot_manage_keys(srv: RunningServer) -> None:
    new_team(srv, "members")
    member, member_id = new_key(srv, "members")
    for method, path in (
        ("GET", ""),
        ("POST", ""),
        ("GET", f"/{member_id}"),
        ("PATCH", f"/{member_id}"),
        ("DELETE", f"/{member_id}"),
    ):
        answer = call(srv, member, method, path, json={})
        assert answer.status_code == 403 and answer.json() == FORBIDDEN, (method, path, answer.text)


def test_an_admin_key_manages_its_teams_keys(srv: RunningServer) -> None:
    new_team(srv, "admins")
    boss, boss_id = new_key(srv, "admins", role="admin", name="boss")
    created = call(srv, boss, "POST", json={"name": "app", "rpm": 10, "spend_limit_usd": "1", "models": ["fake/*"]})
    assert created.status_code == 200, created.text
    data = created.json()["data"]
    secret, key_id = data["key"], data["id"]
    assert data["role"] == "member" and data["rpm"] == 10 and data["spend"]["remaining_usd"] == 1
    assert httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(secret), timeout=30).status_code == 200
    page = call(srv, boss, "GET", params={"page_size": 1}).json()["data"]
    assert page["total"] == 2 and len(page["keys"]) == 1 and "key" not in page["keys"][0]
    assert {
        k["id"]
        for p in (1, 2)
        for k in call(srv, boss, "GET", params={"page": p, "page_size": 1}).json()["data"]["keys"]
    } == {boss_id, key_id}
    changed = call(srv, boss, "PATCH", f"/{key_id}", json={"rpm": 20, "name": "renamed"})
    assert changed.status_code == 200 and changed.json()["data"]["rpm"] == 20
    assert call(srv, boss, "GET", f"/{key_id}").json()["data"]["name"] == "renamed"
    revoked = call(srv, boss, "DELETE", f"/{key_id}")
    assert revoked.status_code == 200 and revoked.json()["data"]["active"] is False
    assert httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(secret), timeout=30).status_code == 401
    bad = call(srv, boss, "POST", json={"rpm": "fast"})
    assert bad.status_code == 400 and bad.json()["message"].startswith("Invalid parameters: rpm")


def test_another_teams_key_is_not_found(srv: RunningServer) -> None:
    new_team(srv, "mine")
    new_team(srv, "theirs")
    boss, _ = new_key(srv, "mine", role="admin")
    _, theirs = new_key(srv, "theirs")
    for method in ("GET", "PATCH", "DELETE"):
        answer = call(srv, boss, method, f"/{theirs}", json={})
        assert answer.status_code == 404, answer.text


def test_a_key_never_gives_more_than_it_has(srv: RunningServer) -> None:
    new_team(srv, "bounded")
    boss, boss_id = new_key(srv, "bounded", role="admin", rpm=10, spend_limit_usd="5", models=["openai/*"])
    for fields, name in (
        ({"rpm": 20, "spend_limit_usd": "1", "models": ["openai/gpt-4o"]}, "rpm"),
        ({"rpm": 5, "models": ["openai/gpt-4o"]}, "spend_limit_usd"),  # no limit is more than 5 USD
        ({"rpm": 5, "spend_limit_usd": "1"}, "models"),
        ({"rpm": 5, "spend_limit_usd": "1", "models": ["*"]}, "models"),
    ):
        answer = call(srv, boss, "POST", json=fields)
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"] == f"Forbidden: this API key cannot give a key more than its own {name}"
    narrower = call(
        srv, boss, "POST", json={"rpm": 5, "spend_limit_usd": "1", "models": ["openai/gpt-*"], "role": "admin"}
    )
    assert narrower.status_code == 200, narrower.text
    # Its own limits: lowering is fine, raising (or clearing) is not.
    assert call(srv, boss, "PATCH", f"/{boss_id}", json={"rpm": 8}).status_code == 200
    raised = call(srv, boss, "PATCH", f"/{boss_id}", json={"rpm": None})
    assert raised.status_code == 403
    assert call(srv, boss, "GET", f"/{boss_id}").json()["data"]["rpm"] == 8
    # A member-made-admin cannot happen from a member; an admin key below cannot raise its role: it has one.
    sub = narrower.json()["data"]["key"]
    sub_made = call(srv, sub, "POST", json={"rpm": 5, "spend_limit_usd": "2", "models": ["openai/gpt-4o"]})
    assert sub_made.status_code == 403  # 2 USD is more than its own 1 USD


def test_bad_bodies_and_queries_are_400_in_the_media_shape(srv: RunningServer) -> None:
    new_team(srv, "odd-bodies")
    boss, boss_id = new_key(srv, "odd-bodies", role="admin")
    for raw in (b"[1]", b"{", b'"x"'):
        answer = httpx.post(
            srv.media_url + "/api/v1/keys",
            content=raw,
            headers={**bearer(boss), "content-type": "application/json"},
            timeout=30,
        )
        assert answer.status_code == 400 and answer.json()["code"] == 400, (raw, answer.text)
    for body in (
        {"spend_limit_usd": [1]},
        {"spend_limit_usd": "NaN"},
        {"models": [1]},
        {"models": "openai/*"},
        {"expires_at": 1e30},
        {"role": ["admin"]},
        {"name": {"a": 1}},
        {"allowed_ips": "10.0.0.0/8"},
        {"tpm": 2.5},
        {"unknown": 1},
    ):
        for method, path in (("POST", ""), ("PATCH", f"/{boss_id}")):
            answer = call(srv, boss, method, path, json=body)
            assert answer.status_code == 400, (method, body, answer.text)
            assert answer.json()["message"].startswith("Invalid parameters: "), answer.text
    for query in ({"page": "0"}, {"page_size": "1000"}, {"page": "x"}):
        answer = call(srv, boss, "GET", params=query)
        assert answer.status_code == 400 and answer.json()["code"] == 400, (query, answer.text)
