"""Per-key limits through a real `modelport serve`, on SQLite and PostgreSQL: every field through the admin
API, and each refusal on both hosts (expiry, allowed IPs, model patterns, RPM, TPM, spend limit)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.integration.keys.helpers import CHAT, COST_MICROS, admin, bearer, keys_server, new_key, new_team
from tests.support.databases import BACKENDS, migrated_database_url
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer

SKETCH = {"prompt": "a cat"}


@pytest.fixture(scope="module", params=BACKENDS)
async def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    tmp = tmp_path_factory.mktemp(f"keys-{request.param}")
    with FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as upstream:
        async with migrated_database_url(request.param, tmp) as db_url:
            with keys_server(tmp, upstream, db_url) as running:
                yield running


def chat(srv: RunningServer, key: str, **body: object) -> httpx.Response:
    return httpx.post(srv.text_url + "/v1/chat/completions", json={**CHAT, **body}, headers=bearer(key), timeout=60)


def sketch(srv: RunningServer, key: str) -> httpx.Response:
    return httpx.post(srv.media_url + "/local/sketch-image", json=SKETCH, headers=bearer(key), timeout=60)


def test_every_field_is_stored_shown_and_changed(srv: RunningServer) -> None:
    new_team(srv, "fields")
    fields = {
        "name": "app",
        "spend_limit_usd": "2.5",
        "spend_limit_period": "week",
        "models": ["openai/*", "local/sketch-image"],
        "rpm": 60,
        "tpm": 100000,
        "expires_at": 4_000_000_000,
        "allowed_ips": ["10.0.0.0/8", "::1"],
        "role": "admin",
    }
    _, key_id = new_key(srv, "fields", **fields)
    shown = admin(srv, "GET", f"/keys/{key_id}").json()["data"]
    assert {k: shown[k] for k in fields} == {
        **fields,
        "spend_limit_usd": 2.5,
        "allowed_ips": ["10.0.0.0/8", "::1/128"],
    }
    changed = admin(srv, "PATCH", f"/keys/{key_id}", json={"rpm": None, "models": ["fake/*"], "role": "member"})
    assert changed.status_code == 200
    data = changed.json()["data"]
    assert (data["rpm"], data["models"], data["role"], data["tpm"]) == (None, ["fake/*"], "member", 100000)
    for bad in ({"spend_limit_period": "year"}, {"rpm": 0}, {"allowed_ips": ["10.0.0.300/8"]}, {"role": "root"}):
        refused = admin(srv, "PATCH", f"/keys/{key_id}", json=bad)
        assert refused.status_code == 400, refused.text
        assert refused.json()["message"].startswith("Invalid parameters: ")


def test_cli_creates_and_updates_a_key_with_every_option(srv: RunningServer) -> None:
    new_team(srv, "cli")
    made = srv.cli(
        "admin", "key", "create", "cli", "--name", "N", "--spend-limit", "5", "--period", "month",
        "--models", "openai/*,local/*", "--rpm", "60", "--tpm", "100000", "--expires", "2027-01-01",
        "--allow-ip", "10.0.0.0/8", "--role", "admin", "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    import json

    created = json.loads(made.stdout)
    assert created["models"] == ["openai/*", "local/*"] and created["expires_at"] == 1798761600
    assert (created["rpm"], created["tpm"], created["role"], created["allowed_ips"]) == (
        60,
        100000,
        "admin",
        ["10.0.0.0/8"],
    )
    updated = srv.cli("admin", "key", "update", created["id"], "--rpm", "none", "--spend-limit", "7", "--json")
    assert updated.returncode == 0, updated.stderr
    after = json.loads(updated.stdout)
    assert after["rpm"] is None and after["spend_limit_usd"] == 7 and after["spend_limit_period"] == "month"
    bad = srv.cli("admin", "key", "update", created["id"], "--expires", "soon")
    assert bad.returncode != 0 and "expires" in bad.stderr


def test_an_expired_key_is_refused_on_both_hosts(srv: RunningServer) -> None:
    new_team(srv, "expiry")
    key, key_id = new_key(srv, "expiry", expires_at=int(time.time()) + 3600)
    assert chat(srv, key).status_code == 200
    assert admin(srv, "PATCH", f"/keys/{key_id}", json={"expires_at": int(time.time()) - 1}).status_code == 200
    text = chat(srv, key)
    assert text.status_code == 401
    assert text.json()["error"]["code"] == "key_expired"
    assert text.json()["error"]["type"] == "invalid_request_error"
    media = httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(key), timeout=30)
    assert media.status_code == 401
    assert media.json() == {"code": 401, "message": "Authentication failed: invalid team"}


def test_allowed_ips_refuse_other_addresses_on_both_hosts(srv: RunningServer) -> None:
    new_team(srv, "ips")
    elsewhere, _ = new_key(srv, "ips", allowed_ips=["10.0.0.0/8"])
    here, _ = new_key(srv, "ips", allowed_ips=["10.0.0.0/8", "127.0.0.0/8"])
    text = chat(srv, elsewhere)
    assert text.status_code == 401 and text.json()["error"]["code"] == "ip_not_allowed"
    media = httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(elsewhere), timeout=30)
    assert media.status_code == 401 and media.json()["message"] == "Authentication failed: invalid team"
    assert chat(srv, here).status_code == 200
    assert httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(here), timeout=30).status_code == 200


def test_models_outside_the_patterns_are_unknown_to_the_key(srv: RunningServer) -> None:
    new_team(srv, "models")
    key, _ = new_key(srv, "models", models=["fake/*"])
    listed = httpx.get(srv.text_url + "/v1/models", headers=bearer(key), timeout=30).json()["data"]
    assert [m["id"] for m in listed] == ["fake/chat"]
    assert chat(srv, key).status_code == 200
    other = chat(srv, key, model="other/chat")
    assert other.status_code == 404 and other.json()["error"]["code"] == "model_not_found"
    one = httpx.get(srv.text_url + "/v1/models/other/chat", headers=bearer(key), timeout=30)
    assert one.status_code == 404
    media_list = httpx.get(srv.media_url + "/api/v1/models", headers=bearer(key), timeout=30).json()["data"]
    assert media_list["models"] == []
    refused = sketch(srv, key)
    assert (
        refused.status_code == 404
        and refused.json()["message"] == "Not found: model 'local/sketch-image' does not exist"
    )
    media_key, _ = new_key(srv, "models", models=["local/sketch-image"])
    slugs = [
        m["slug"]
        for m in httpx.get(srv.media_url + "/api/v1/models", headers=bearer(media_key), timeout=30).json()["data"][
            "models"
        ]
    ]
    assert slugs == ["local/sketch-image"]
    assert sketch(srv, media_key).status_code == 200
    text_list = httpx.get(srv.text_url + "/v1/models", headers=bearer(media_key), timeout=30).json()["data"]
    assert text_list == []


def test_key_rpm_counts_text_and_media_with_the_keys_own_headers(srv: RunningServer) -> None:
    new_team(srv, "rpm")
    key, _ = new_key(srv, "rpm", rpm=3)
    first = chat(srv, key)
    assert first.status_code == 200
    assert sketch(srv, key).status_code == 200
    assert chat(srv, key).status_code == 200
    refused = chat(srv, key)
    assert refused.status_code == 429
    assert refused.json()["error"]["type"] == "rate_limit_exceeded"
    assert refused.headers["X-RateLimit-Limit"] == "3" and refused.headers["X-RateLimit-Remaining"] == "0"
    assert int(refused.headers["X-RateLimit-Reset"]) > time.time() and "Retry-After" in refused.headers
    media = sketch(srv, key)
    assert media.status_code == 429 and media.headers["X-RateLimit-Limit"] == "3"
    assert media.json()["message"].startswith("Rate limit exceeded: ")
    left = httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(key), timeout=30).json()["data"]
    assert left["rate_remaining"] == {"rpm": 0, "tpm": None} and left["limits"]["rpm"] == 3
    other, _ = new_key(srv, "rpm")  # the team's other keys keep the team's own limit
    assert chat(srv, other).status_code == 200


def test_key_tpm_counts_the_tokens_used(srv: RunningServer) -> None:
    new_team(srv, "tpm")
    # 110 tokens a request (10 + 100, the estimate reserved on admission is about as much): 2 fit in 300.
    key, _ = new_key(srv, "tpm", tpm=300)
    assert chat(srv, key).status_code == 200
    assert chat(srv, key).status_code == 200
    deadline = time.monotonic() + 10
    while (refused := chat(srv, key)).status_code == 200:  # the count of a finished request lands just after it
        assert time.monotonic() < deadline, "the third request was never refused"
    assert refused.status_code == 429, refused.text
    assert refused.headers["X-RateLimit-Limit"] == "300"
    assert "tokens per minute" in refused.json()["error"]["message"]


def test_a_tiers_tpm_limits_the_team(srv: RunningServer) -> None:
    new_team(srv, "metered")
    assert admin(srv, "PUT", "/teams/metered/tier", json={"tier": "metered"}).status_code == 200
    key, _ = new_key(srv, "metered")
    assert chat(srv, key).status_code == 200
    assert chat(srv, key).status_code == 200
    deadline = time.monotonic() + 10
    while (refused := chat(srv, key)).status_code == 200:
        assert time.monotonic() < deadline, "the team's tokens per minute were never reached"
    assert refused.status_code == 429 and refused.headers["X-RateLimit-Limit"] == "300"
    assert refused.json()["error"]["message"] == "the team's limit of 300 tokens per minute"


def test_key_spend_limit_on_both_hosts_and_in_validate(srv: RunningServer) -> None:
    new_team(srv, "spend", usd="10")
    # Three text requests and change; the media host's model costs 2000 micro-USD.
    key, key_id = new_key(
        srv, "spend", spend_limit_usd=str((3 * COST_MICROS + 100) / 1_000_000), spend_limit_period="day"
    )
    codes = [chat(srv, key).status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [402, 402], codes
    refused = chat(srv, key)
    error = refused.json()["error"]
    assert (error["message"], error["type"], error["code"]) == (
        "Insufficient balance: the API key's spend limit is reached",
        "insufficient_quota",
        "key_budget_exceeded",
    )
    media = sketch(srv, key)
    assert media.status_code == 402
    assert media.json() == {"code": 402, "message": "Insufficient balance: the API key's spend limit is reached"}
    deadline = time.monotonic() + 15
    while True:  # settlements are written in the background, reservations returned after idling
        spend = httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(key), timeout=30).json()["data"]
        if spend["spend"]["spent_usd"] == 3 * COST_MICROS / 1_000_000 and spend["spend"]["frozen_usd"] == 0:
            break
        assert time.monotonic() < deadline, str(spend["spend"])
        time.sleep(0.1)
    assert spend["limits"]["spend_limit_period"] == "day"
    assert spend["spend"]["remaining_usd"] == 100 / 1_000_000
    assert spend["spend"]["period_end"] - spend["spend"]["period_start"] == 86400
    # Raised: the next request fits again, and a media task's price counts too.
    assert admin(srv, "PATCH", f"/keys/{key_id}", json={"spend_limit_usd": "1"}).status_code == 200
    assert sketch(srv, key).status_code == 200
    assert chat(srv, key).status_code == 200


def test_logs_carry_the_key_id(srv: RunningServer) -> None:
    new_team(srv, "logs")
    key, key_id = new_key(srv, "logs")
    assert chat(srv, key).status_code == 200
    deadline = time.monotonic() + 15
    while True:
        now = int(time.time())
        page = httpx.get(
            srv.text_url + f"/v1/logs?start_time={now - 600}&end_time={now + 60}", headers=bearer(key), timeout=30
        ).json()
        if page["requests"]:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert page["requests"][0]["key_id"] == key_id
