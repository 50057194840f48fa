"""The operator verbs through a real `modelport serve`: the admin API and the CLI reach the same service."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "operator-admin-token-0123456789-abcdef"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(tmp_path_factory.mktemp("operator"), MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN) as running:
        yield running


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _refusals(server: RunningServer, key: str) -> tuple[httpx.Response, httpx.Response]:
    media = httpx.get(server.media_url + "/api/v1/apikey/validate", headers=_bearer(key))
    text = httpx.get(server.text_url + "/v1/models", headers={"x-api-key": key})
    return media, text


def test_suspend_over_the_api_refuses_the_teams_keys_on_both_hosts(server: RunningServer) -> None:
    url = server.media_url + "/admin/v1"
    assert httpx.post(url + "/teams", json={"name": "paused"}, headers=ADMIN).status_code == 200
    key = httpx.post(url + "/teams/paused/keys", json={}, headers=ADMIN).json()["data"]["key"]
    media, text = _refusals(server, key)
    assert media.status_code == 200 and text.status_code == 200

    assert httpx.post(url + "/teams/paused/suspend").status_code == 401  # the admin token is still required
    r = httpx.post(url + "/teams/paused/suspend", headers=ADMIN)
    assert r.status_code == 200 and r.json()["data"]["suspended"] is True
    media, text = _refusals(server, key)
    assert media.status_code == 401 and media.json() == {"code": 401, "message": "Authentication failed: invalid team"}
    assert text.status_code == 401
    assert text.json()["error"]["code"] == "team_suspended" and "suspended" in text.json()["error"]["message"]
    # A chat request too, in its protocol's shape.
    chat = httpx.post(
        server.text_url + "/v1/messages",
        headers={"x-api-key": key},
        json={"model": "local/smollm2-135m-instruct", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert chat.status_code == 401 and chat.json()["type"] == "error", chat.text
    # The team stays visible to the operator, and the demo team's key is untouched.
    assert httpx.get(url + "/teams/paused", headers=ADMIN).json()["data"]["suspended"] is True
    assert _refusals(server, server.demo_key or "")[0].status_code == 200

    r = httpx.post(url + "/teams/paused/unsuspend", headers=ADMIN)
    assert r.status_code == 200 and r.json()["data"]["suspended"] is False
    media, text = _refusals(server, key)
    assert media.status_code == 200 and text.status_code == 200
    assert httpx.post(url + "/teams/nobody/suspend", headers=ADMIN).status_code == 404


def test_cli_suspend_reaches_the_server_and_lists_it(server: RunningServer) -> None:
    assert server.cli("admin", "team", "create", "clipaused").returncode == 0
    key = json.loads(server.cli("admin", "key", "create", "clipaused", "--json").stdout)["key"]
    done = server.cli("admin", "team", "suspend", "clipaused", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["suspended"] is True
    assert all(r.status_code == 401 for r in _refusals(server, key))  # tests run with a 0 s key cache
    listed = server.cli("admin", "team", "list")
    assert any("clipaused" in line and line.endswith("suspended") for line in listed.stdout.splitlines())
    assert server.cli("admin", "team", "unsuspend", "clipaused").returncode == 0
    assert all(r.status_code == 200 for r in _refusals(server, key))
    missing = server.cli("admin", "team", "suspend", "nobody")
    assert missing.returncode != 0 and "no team 'nobody'" in missing.stderr and "Traceback" not in missing.stderr


def test_topup_notes_and_ledger_pages_over_the_api_and_the_cli(server: RunningServer) -> None:
    url = server.media_url + "/admin/v1"
    httpx.post(url + "/teams", json={"name": "noted"}, headers=ADMIN)
    r = httpx.post(url + "/teams/noted/topups", json={"amount_usd": "3", "note": "invoice 7"}, headers=ADMIN)
    assert r.status_code == 200 and r.json()["data"]["amount_usd"] == 3
    cli = server.cli("admin", "topup", "noted", "2", "--note", "wire transfer", "--json")
    assert cli.returncode == 0, cli.stderr
    httpx.post(url + "/teams/noted/topups", json={"amount_usd": "1"}, headers=ADMIN)
    entries = httpx.get(url + "/teams/noted/ledger", headers=ADMIN).json()["data"]["entries"]
    assert [e["note"] for e in entries] == ["top-up", "wire transfer", "invoice 7"]
    page = httpx.get(url + "/teams/noted/ledger", params={"before_id": entries[0]["id"], "limit": 1}, headers=ADMIN)
    assert [e["note"] for e in page.json()["data"]["entries"]] == ["wire transfer"]
    too_long = httpx.post(url + "/teams/noted/topups", json={"amount_usd": "1", "note": "x" * 256}, headers=ADMIN)
    assert too_long.status_code == 400
    shown = server.cli("admin", "ledger", "noted", "--limit", "2", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [e["note"] for e in json.loads(shown.stdout)["entries"]] == ["top-up", "wire transfer"]
    plain = server.cli("admin", "ledger", "noted")
    assert "invoice 7" in plain.stdout and "topup" in plain.stdout


def test_cli_tier_set_still_refuses_an_unknown_tier_as_a_bad_parameter(server: RunningServer) -> None:
    bad = server.cli("admin", "tier", "set", "demo", "platinum")
    assert bad.returncode == 2 and "unknown tier 'platinum'" in bad.stderr
    ok = server.cli("admin", "tier", "set", "demo", "tier1", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["tier"] == "tier1"
