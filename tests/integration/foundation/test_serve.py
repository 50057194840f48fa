"""End to end through `modelport serve`: banner, utility endpoints, auth failures, host separation, admin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import RunningServer, run_server, worker_pids

ADMIN_TOKEN = "test-admin-token-0123456789-abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(tmp_path_factory.mktemp("serve"), MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN) as running:
        yield running


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_demo_key_answers_the_three_utility_endpoints(server: RunningServer) -> None:
    assert server.demo_key is not None
    h = bearer(server.demo_key)
    validate = httpx.get(server.media_url + "/api/v1/apikey/validate", headers=h)
    assert validate.status_code == 200
    body = validate.json()
    assert body["code"] == 0 and body["message"] == "success"
    assert body["data"]["valid"] is True and body["data"]["team"]["name"] == "demo"
    assert validate.headers["x-request-id"].startswith("req_")

    balance = httpx.get(server.media_url + "/api/v1/team/balance", headers=h)
    assert balance.status_code == 200
    # Four decimal places, as an exact JSON number.
    assert '"available_balance":5.0000' in balance.text
    assert balance.json()["data"]["frozen_balance"] == 0

    models = httpx.get(server.media_url + "/api/v1/models", headers=h)
    assert models.status_code == 200
    # The embedded task models are published; the placeholder pillow-image entry is not.
    assert [m["slug"] for m in models.json()["data"]["models"]] == [
        "local/sketch-image",
        "local/slideshow-video",
        "local/style-transfer",
        "local/style-video",
    ]


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer mp-wrong"}, {"Authorization": "Basic abc"}, {"x-api-key": "mp-wrong"}]
)
def test_media_host_401_shape(server: RunningServer, headers: dict[str, str]) -> None:
    for path in ("/api/v1/apikey/validate", "/api/v1/team/balance", "/api/v1/models"):
        r = httpx.get(server.media_url + path, headers=headers)
        assert r.status_code == 401
        assert r.json() == {"code": 401, "message": "Authentication failed: invalid team"}


def test_text_gateway_auth_headers(server: RunningServer) -> None:
    key = server.demo_key
    assert key is not None
    url = server.text_url + "/v1/models"
    assert httpx.get(url, headers=bearer(key)).status_code == 200
    assert httpx.get(url, headers={"x-api-key": key}).status_code == 200
    assert httpx.get(url, headers={**bearer(key), "x-api-key": key}).status_code == 200
    for headers in ({}, bearer("mp-nope"), {"x-api-key": "mp-nope"}, {**bearer(key), "x-api-key": key + "x"}):
        r = httpx.get(url, headers=headers)
        assert r.status_code == 401, headers
        assert r.json()["error"]["type"] == "invalid_request_error"
        assert set(r.json()) == {"error"}


def test_revoked_key_is_refused_on_both_hosts(server: RunningServer) -> None:
    created = server.cli("admin", "key", "create", "demo", "--json")
    assert created.returncode == 0, created.stderr
    data = json.loads(created.stdout)
    assert set(data) >= {"key", "id", "team"}
    key = data["key"]
    assert httpx.get(server.media_url + "/api/v1/apikey/validate", headers=bearer(key)).status_code == 200
    revoked = server.cli("admin", "key", "revoke", data["id"], "--json")
    assert revoked.returncode == 0 and json.loads(revoked.stdout)["active"] is False
    assert httpx.get(server.media_url + "/api/v1/apikey/validate", headers=bearer(key)).status_code == 401
    assert httpx.get(server.text_url + "/v1/models", headers=bearer(key)).status_code == 401


def test_hosts_do_not_mix(server: RunningServer) -> None:
    assert server.demo_key is not None
    h = bearer(server.demo_key)
    r = httpx.get(server.text_url + "/api/v1/team/balance", headers=h)
    assert r.status_code == 404 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.get(server.media_url + "/v1/models", headers=h)
    assert r.status_code == 404 and r.json()["code"] == 404 and r.json()["message"].startswith("Not found: ")
    r = httpx.post(server.media_url + "/v1/chat/completions", headers=h, json={})
    assert r.status_code == 404 and r.json()["code"] == 404


def test_openapi_per_host(server: RunningServer) -> None:
    media = httpx.get(server.media_url + "/openapi.json").json()
    text = httpx.get(server.text_url + "/openapi.json").json()
    assert "/api/v1/team/balance" in media["paths"] and "/v1/models" not in media["paths"]
    assert "/v1/models" in text["paths"] and not any(p.startswith("/api/") for p in text["paths"])


def test_admin_api_with_token(server: RunningServer) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    url = server.media_url + "/admin/v1"
    assert httpx.get(url + "/teams").status_code == 401
    r = httpx.post(url + "/teams", json={"name": "acme"}, headers=admin)
    assert r.status_code == 200 and r.json()["data"]["tier"] == "free"
    assert httpx.post(url + "/teams", json={"name": "acme"}, headers=admin).status_code == 409
    key = httpx.post(url + "/teams/acme/keys", json={"name": "k"}, headers=admin).json()["data"]
    top = httpx.post(url + "/teams/acme/topups", json={"amount_usd": "12.5"}, headers=admin).json()["data"]
    assert top["tier_changed"] is True and top["team"]["tier"] == "tier1"
    bal = httpx.get(server.media_url + "/api/v1/team/balance", headers=bearer(key["key"])).json()["data"]
    assert str(bal["available_balance"]) == "12.5"
    bad = httpx.post(url + "/teams/acme/topups", json={"amount_usd": "abc"}, headers=admin)
    assert bad.status_code == 400 and bad.json()["message"].startswith("Invalid parameters")
    assert httpx.put(url + "/teams/acme/tier", json={"tier": "nope"}, headers=admin).status_code == 400
    flags = httpx.patch(url + "/teams/acme", json={"asset_service": True}, headers=admin).json()["data"]
    assert flags["asset_service"] is True
    ledger = httpx.get(url + "/teams/acme/ledger", headers=admin).json()["data"]["entries"]
    assert [e["kind"] for e in ledger] == ["topup"]


def test_huge_topups_are_400_over_http_and_a_cli_error(server: RunningServer) -> None:
    # Amounts at 9.2e12 USD and past 64 bits of micro-USD gave a 500 or a float balance.
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    url = server.media_url + "/admin/v1/teams/demo/topups"
    before = httpx.get(server.media_url + "/api/v1/team/balance", headers=bearer(server.demo_key or "")).text
    for amount in ("9300000000000", "18446744073709.551616", "1e30", 1e300):
        r = httpx.post(url, json={"amount_usd": amount}, headers=admin)
        assert r.status_code == 400, (amount, r.text)
        assert r.json()["message"].startswith("Invalid parameters")
    cli = server.cli("admin", "topup", "demo", "10000000000000")
    assert cli.returncode != 0 and "at most" in cli.stderr and "Traceback" not in cli.stderr
    after = httpx.get(server.media_url + "/api/v1/team/balance", headers=bearer(server.demo_key or "")).text
    assert after == before


def test_malformed_json_is_400_in_media_shape(server: RunningServer) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"}
    r = httpx.post(server.media_url + "/admin/v1/teams", content=b"{not json", headers=admin)
    assert r.status_code == 400
    assert r.json()["code"] == 400 and r.json()["message"].startswith("Invalid parameters: ")


def test_admin_routes_absent_without_token(tmp_path: Path) -> None:
    with run_server(tmp_path) as plain:
        r = httpx.get(plain.media_url + "/admin/v1/teams", headers={"Authorization": "Bearer anything"})
        assert r.status_code == 404


def test_second_start_reuses_demo_team_and_prints_prefix(tmp_path: Path) -> None:
    with run_server(tmp_path) as first:
        assert first.demo_key is not None
    with run_server(tmp_path) as second:
        assert second.demo_key is None
        assert any(first.demo_key[:10] in line and "modelport admin key create demo" in line for line in second.banner)


def test_several_workers_serve_and_a_crashed_worker_is_replaced(tmp_path: Path) -> None:
    import os
    import signal
    import time

    with run_server(tmp_path, "--workers", "2") as multi:
        assert multi.demo_key is not None
        assert any("rate limits are counted per process" in line for line in multi.banner)
        pids: set[int] = set()
        for _ in range(40):
            r = httpx.get(multi.media_url + "/api/v1/apikey/validate", headers=bearer(multi.demo_key))
            assert r.status_code == 200
        workers = worker_pids(multi.process.pid)
        assert len(workers) >= 2
        # Forked by the CLI before it exec'd the supervisor (they carry its command line), not spawned.
        assert not [pid for pid in workers if b"modelport.process.serving" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        os.kill(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = set(worker_pids(multi.process.pid))
            pids = now - set(workers)
            if pids and workers[0] not in now:
                break
            time.sleep(0.2)
        assert pids, "the supervisor did not start a replacement worker"
        # A replacement is a fresh interpreter.
        assert all(b"modelport.process.serving" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids)
        for _ in range(10):
            assert httpx.get(multi.text_url + "/v1/models", headers=bearer(multi.demo_key)).status_code == 200


# The CLI with a thread that outlives the start-up work: forking now would copy a process whose thread is gone.
_WITH_A_THREAD = """
import runpy, sys, threading, time
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
sys.argv[0] = "modelport"
runpy.run_module("modelport", run_name="__main__", alter_sys=True)
"""


def test_several_workers_are_spawned_fresh_when_the_cli_cannot_fork(tmp_path: Path) -> None:
    with run_server(tmp_path, "--workers", "2", python_args=("-c", _WITH_A_THREAD)) as multi:
        assert multi.demo_key is not None
        workers = worker_pids(multi.process.pid)
        assert len(workers) == 2
        assert all(b"modelport.process.serving" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in workers)
        for _ in range(4):
            assert httpx.get(multi.text_url + "/v1/models", headers=bearer(multi.demo_key)).status_code == 200
        assert multi.stop() == 0
