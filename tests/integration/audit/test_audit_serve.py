"""The audit log through a real `modelport serve` (SQLite and PostgreSQL): one event per change made through
the admin API, the CLI, the keys API and both consoles, secrets masked; the admin and team audit APIs with
their filters and paging; a change whose transaction fails leaves no event."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from modelport.storage.db import create_engine
from tests.integration.keys.helpers import ADMIN_TOKEN, admin, bearer, keys_server, new_key
from tests.support.console import ConsoleClient
from tests.support.databases import BACKENDS, migrated_database_url
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer

EMPTY = {"spend_limit": "", "period": "month", "models": "", "rpm": "", "tpm": "", "expires": "", "allow_ip": ""}


class Srv:
    def __init__(self, running: RunningServer, db_url: str) -> None:
        self.running = running
        self.db_url = db_url
        self.media_url = running.media_url


@pytest.fixture(scope="module", params=BACKENDS)
async def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Srv]:
    tmp = tmp_path_factory.mktemp(f"audit-{request.param}")
    with FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as upstream:
        async with migrated_database_url(request.param, tmp) as db_url:
            with keys_server(tmp, upstream, db_url) as running:
                yield Srv(running, db_url)


def events(srv: Srv, **params: Any) -> list[dict[str, Any]]:
    answer = admin(srv.running, "GET", "/audit", params=params)
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["data"]["events"]
    return found


def team_id(srv: Srv, name: str) -> str:
    found: str = admin(srv.running, "GET", f"/teams/{name}").json()["data"]["id"]
    return found


def test_admin_api_changes_each_record_one_event_with_request_id_and_client(srv: Srv) -> None:
    made = admin(srv.running, "POST", "/teams", json={"name": "aud-api"})
    tid = made.json()["data"]["id"]
    admin(srv.running, "POST", "/teams/aud-api/topups", json={"amount_usd": "12.5", "note": "wire"})
    admin(srv.running, "PUT", "/teams/aud-api/tier", json={"tier": "metered"})
    admin(srv.running, "PATCH", "/teams/aud-api", json={"asset_service": True})
    admin(srv.running, "POST", "/teams/aud-api/suspend")
    admin(srv.running, "POST", "/teams/aud-api/suspend")  # a no-op: no event
    admin(srv.running, "POST", "/teams/aud-api/unsuspend")
    secret, key_id = new_key(srv.running, "aud-api", name="k", rpm=5)
    patched = admin(srv.running, "PATCH", f"/keys/{key_id}", json={"rpm": 7})
    assert patched.status_code == 200, patched.text
    admin(srv.running, "PATCH", f"/keys/{key_id}", json={"rpm": 7})  # the same value: no event
    admin(srv.running, "PUT", "/teams/aud-api/tier", json={"tier": "metered"})  # likewise
    admin(srv.running, "POST", f"/keys/{key_id}/revoke")

    found = list(reversed(events(srv, team=tid)))
    assert [e["action"] for e in found] == [
        "team.create",
        "team.topup",
        "team.tier",
        "team.flags",
        "team.suspend",
        "team.unsuspend",
        "key.create",
        "key.update",
        "key.revoke",
    ]
    assert all(e["actor"] == {"kind": "operator_token", "key_id": None, "user_id": None, "email": None} for e in found)
    assert all(e["client"] == "127.0.0.1" and e["request_id"].startswith("req_") for e in found)
    assert found[0]["request_id"] == made.headers["x-request-id"]
    topup = found[1]
    assert topup["before"]["balance_usd"] == "0" and topup["after"]["amount_usd"] == "12.5"
    assert topup["after"]["note"] == "wire"
    assert (found[2]["before"], found[2]["after"]) == ({"tier": "free"}, {"tier": "metered"})
    assert found[3]["after"] == {"asset_service": True}
    assert found[7]["target"] == key_id and (found[7]["before"], found[7]["after"]) == ({"rpm": 5}, {"rpm": 7})
    assert found[8]["after"]["active"] is False
    assert secret not in json.dumps(found) and secret[-8:] not in json.dumps(found)


def test_cli_keys_api_and_consoles_are_recorded_with_their_actor_and_secrets_masked(srv: Srv) -> None:
    assert srv.running.cli("admin", "team", "create", "aud-mixed").returncode == 0
    tid = team_id(srv, "aud-mixed")
    made = srv.running.cli("admin", "key", "create", "aud-mixed", "--role", "admin", "--json")
    assert made.returncode == 0, made.stderr
    boss = json.loads(made.stdout)
    # The keys API and the webhook secret's rotation, by the admin key.
    created = httpx.post(srv.media_url + "/api/v1/keys", json={"name": "app"}, headers=bearer(boss["key"]), timeout=30)
    assert created.status_code == 200, created.text
    rotated = httpx.post(srv.media_url + "/api/v1/webhooks/secret/rotate", headers=bearer(boss["key"]), timeout=30)
    assert rotated.status_code == 200, rotated.text
    whsec = rotated.json()["data"]["secret"]
    # The team console, signed in with the admin key, and the operator console.
    team = ConsoleClient(srv.media_url)
    operator = ConsoleClient(srv.media_url)
    try:
        assert team.sign_in(boss["key"]).status_code == 303
        assert team.post_form("/keys", {**EMPTY, "name": "ci", "role": "member"}).status_code == 201
        assert team.post_form("/webhooks/rotate", {}, csrf_from="/webhooks").status_code == 200
        assert operator.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
        topped = operator.post_form(f"/admin/teams/{tid}/topup", {"amount_usd": "3"}, csrf_from=f"/admin/teams/{tid}")
        assert topped.status_code == 303
    finally:
        team.close()
        operator.close()

    found = list(reversed(events(srv, team=tid)))
    assert [(e["actor"]["kind"], e["action"]) for e in found] == [
        ("operator_cli", "team.create"),
        ("operator_cli", "key.create"),
        ("team_key", "key.create"),
        ("team_key", "webhook_secret.rotate"),
        ("team_console", "key.create"),
        ("team_console", "webhook_secret.rotate"),
        ("operator_console", "team.topup"),
    ]
    assert [e["actor"]["key_id"] for e in found[2:6]] == [boss["id"]] * 4
    assert found[0]["client"] is None and found[2]["client"] == "127.0.0.1"
    rotation = found[3]
    assert rotation["after"]["secret"] == "••••" + whsec[-4:] and rotation["before"]["secret"].startswith("••••")
    dumped = json.dumps(found)
    assert whsec not in dumped and boss["key"] not in dumped and created.json()["data"]["key"] not in dumped


def test_the_team_audit_api_is_its_own_admin_keys_only(srv: Srv) -> None:
    for name in ("aud-own", "aud-other"):
        assert admin(srv.running, "POST", "/teams", json={"name": name}).status_code == 200
    boss, _ = new_key(srv.running, "aud-own", role="admin")
    member, _ = new_key(srv.running, "aud-own")
    new_key(srv.running, "aud-other")
    url = srv.media_url + "/api/v1/audit"
    refused = httpx.get(url, headers=bearer(member), timeout=30)
    assert refused.status_code == 403
    assert refused.json() == {"code": 403, "message": "Forbidden: your role in this team does not allow this"}
    own = httpx.get(url, headers=bearer(boss), timeout=30)
    assert own.status_code == 200, own.text
    tid = team_id(srv, "aud-own")
    assert own.json()["data"]["events"] and all(e["team_id"] == tid for e in own.json()["data"]["events"])
    # Its filters and paging are the admin API's, always within the team.
    keys = httpx.get(url, params={"action": "key.create", "limit": 1}, headers=bearer(boss), timeout=30).json()["data"]
    assert len(keys["events"]) == 1 and keys["next_before_id"] == keys["events"][0]["id"]
    older = httpx.get(
        url, params={"action": "key.create", "before_id": keys["next_before_id"]}, headers=bearer(boss), timeout=30
    ).json()["data"]
    assert [e["action"] for e in older["events"]] == ["key.create"] and older["next_before_id"] is None
    for bad in ({"actor_kind": "robot"}, {"since": "yesterday"}, {"limit": "0"}, {"before_id": "²"}):
        answer = httpx.get(url, params=bad, headers=bearer(boss), timeout=30)
        assert answer.status_code == 400 and answer.json()["code"] == 400, (bad, answer.text)


def test_admin_audit_filters_by_actor_action_and_time(srv: Srv) -> None:
    assert admin(srv.running, "POST", "/teams", json={"name": "aud-filter"}).status_code == 200
    tid = team_id(srv, "aud-filter")
    first = events(srv, team=tid)[0]
    admin(srv.running, "POST", "/teams/aud-filter/topups", json={"amount_usd": "1"})
    assert [e["action"] for e in events(srv, team=tid, action="team.topup")] == ["team.topup"]
    assert events(srv, team=tid, actor_kind="team_key") == []
    assert [e["id"] for e in events(srv, team=tid, until=first["at_ms"] + 1)][-1] == first["id"]
    assert all(e["at_ms"] >= first["at_ms"] for e in events(srv, since=first["at_ms"]))
    assert admin(srv.running, "GET", "/audit", params={"team": "nobody"}).status_code == 404
    assert admin(srv.running, "GET", "/audit", params={"actor_kind": "x"}).status_code == 400
    assert httpx.get(srv.media_url + "/admin/v1/audit", timeout=30).status_code == 401


async def test_a_change_whose_transaction_fails_leaves_no_event(srv: Srv) -> None:
    """PostgreSQL: a deferred trigger fails the commit after the event was written, so both roll back.
    SQLite: the event's insert fails, so the change made before it in the transaction rolls back too."""
    assert admin(srv.running, "POST", "/teams", json={"name": "aud-doomed"}).status_code == 200
    tid = team_id(srv, "aud-doomed")
    engine = create_engine(srv.db_url)
    try:
        async with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                await conn.execute(
                    text(
                        "CREATE FUNCTION doom() RETURNS trigger AS $$ BEGIN "
                        f"IF NEW.id = '{tid}' THEN RAISE EXCEPTION 'doomed'; END IF; RETURN NEW; END $$ "
                        "LANGUAGE plpgsql"
                    )
                )
                await conn.execute(
                    text(
                        "CREATE CONSTRAINT TRIGGER doom AFTER UPDATE ON teams DEFERRABLE INITIALLY DEFERRED "
                        "FOR EACH ROW EXECUTE FUNCTION doom()"
                    )
                )
            else:
                await conn.execute(
                    text(
                        f"CREATE TRIGGER doom BEFORE INSERT ON audit_events WHEN NEW.team_id = '{tid}' "
                        "BEGIN SELECT RAISE(ABORT, 'doomed'); END"
                    )
                )
        failed = admin(srv.running, "PATCH", "/teams/aud-doomed", json={"asset_service": True})
        assert failed.status_code == 500, failed.text
        failed_topup = admin(srv.running, "POST", "/teams/aud-doomed/topups", json={"amount_usd": "5"})
        assert failed_topup.status_code == 500, failed_topup.text
        async with engine.begin() as conn:
            await conn.execute(
                text("DROP TRIGGER doom ON teams" if engine.dialect.name == "postgresql" else "DROP TRIGGER doom")
            )
    finally:
        await engine.dispose()
    after = admin(srv.running, "GET", "/teams/aud-doomed").json()["data"]
    assert after["asset_service"] is False and after["balance_usd"] == 0
    assert [e["action"] for e in events(srv, team=tid)] == ["team.create"]


def test_console_pages_show_and_export_the_log(srv: Srv) -> None:
    assert admin(srv.running, "POST", "/teams", json={"name": "aud-pages"}).status_code == 200
    tid = team_id(srv, "aud-pages")
    boss, boss_id = new_key(srv.running, "aud-pages", role="admin")
    member, _ = new_key(srv.running, "aud-pages", name="plain")
    rotated = httpx.post(srv.media_url + "/api/v1/webhooks/secret/rotate", headers=bearer(boss), timeout=30)
    whsec = rotated.json()["data"]["secret"]
    team, operator, other = (ConsoleClient(srv.media_url) for _ in range(3))
    try:
        assert team.sign_in(boss).status_code == 303
        shown = team.get("/audit")
        assert shown.status_code == 200 and "webhook_secret.rotate" in shown.text and boss_id in shown.text
        assert whsec not in shown.text and "••••" + whsec[-4:] in shown.text
        exported = team.get("/audit", params={"format": "csv", "action": "key.create"})
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
        lines = exported.text.strip().splitlines()
        assert lines[0].startswith("id,at_ms,team_id,actor_kind") and len(lines) == 3  # the two keys
        assert all(tid in line and "key.create" in line for line in lines[1:])
        assert team.get("/audit", params={"actor_kind": "robot"}).status_code == 400
        assert other.sign_in(member).status_code == 303
        assert other.get("/audit").status_code == 403
        assert operator.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
        everything = operator.get("/admin/audit", params={"team": "aud-pages"})
        assert everything.status_code == 200 and "team.create" in everything.text and whsec not in everything.text
        csv_all = operator.get("/admin/audit", params={"team": tid, "format": "csv"}).text.strip().splitlines()
        assert len(csv_all) == 1 + 4  # team.create, two key.create, the rotation
        assert operator.get("/admin/audit", params={"team": "nobody"}).status_code == 404
    finally:
        for client in (team, operator, other):
            client.close()


def test_catalog_edits_are_recorded_with_credential_headers_masked(srv: Srv) -> None:
    header = "Bearer sk-audit-0123456789abcdef"
    spec: dict[str, Any] = {
        "deployments": [
            {
                "kind": "openai_chat",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "headers": {"Authorization": header},
            }
        ]
    }
    put = admin(srv.running, "PUT", "/models/audit/model", json={"kind": "text", "spec": spec})
    assert put.status_code == 200, put.text
    spec["deployments"][0]["model"] = "m2"
    assert admin(srv.running, "PUT", "/models/audit/model", json={"kind": "text", "spec": spec}).status_code == 200
    assert admin(srv.running, "DELETE", "/models/audit/model").status_code == 200
    found = [e for e in events(srv, actor_kind="operator_token") if e["target"] == "audit/model"][::-1]
    assert [e["action"] for e in found] == ["catalog.put", "catalog.put", "catalog.delete"]
    assert found[0]["before"] is None and found[2]["after"] is None and found[0]["team_id"] is None
    assert (found[1]["before"]["deployments"][0]["model"], found[1]["after"]["deployments"][0]["model"]) == ("m", "m2")
    assert found[1]["after"]["deployments"][0]["headers"]["Authorization"] == "••••" + header[-4:]
    assert "sk-audit-0123456789" not in json.dumps(found)
