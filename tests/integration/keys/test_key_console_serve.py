"""Key limits in the web consoles through a real `modelport serve`: the team console creates a key with
limits and edits them (never beyond the signed-in key's own), the operator console does the same for any
team, and both show spend against the limit."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.keys.helpers import ADMIN_TOKEN, CHAT, admin, bearer, keys_server, new_key, new_team
from tests.support.console import ConsoleClient
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer

EMPTY = {"spend_limit": "", "period": "month", "models": "", "rpm": "", "tpm": "", "expires": "", "allow_ip": ""}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("keys-console")
    with (
        FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as upstream,
        keys_server(tmp, upstream, f"sqlite+aiosqlite:///{tmp / 'console.db'}") as running,
    ):
        yield running


def _keys(srv: RunningServer, team: str) -> dict[str, dict[str, object]]:
    return {k["name"]: k for k in admin(srv, "GET", f"/teams/{team}/keys").json()["data"]["keys"]}


def test_the_team_console_creates_and_edits_keys_with_limits(srv: RunningServer) -> None:
    new_team(srv, "console-team")
    # Per day: the boss may give per-day, per-week, per-month and total limits (never a shorter period).
    boss, _ = new_key(
        srv, "console-team", name="boss", role="admin", spend_limit_usd="1", spend_limit_period="day", rpm=100
    )
    client = ConsoleClient(srv.media_url)
    try:
        assert client.sign_in(boss).status_code == 303
        fields = {**EMPTY, "name": "ci", "spend_limit": "0.5", "period": "day", "models": "fake/*", "rpm": "10"}
        made = client.post_form(
            "/keys", {**fields, "expires": "2099-01-01T00:00", "allow_ip": "127.0.0.0/8", "role": "member"}
        )
        assert made.status_code == 201, made.text
        secret = re.search(r'id="new-key" type="text" readonly value="([^"]+)"', made.text)
        assert secret is not None
        ci = _keys(srv, "console-team")["ci"]
        assert (ci["spend_limit_usd"], ci["spend_limit_period"], ci["models"], ci["rpm"]) == (
            0.5,
            "day",
            ["fake/*"],
            10,
        )
        assert ci["allowed_ips"] == ["127.0.0.0/8"] and ci["expires_at"] == 4070908800
        # More than the signed-in key has: refused, nothing created.
        refused = client.post_form(
            "/keys", {**EMPTY, "name": "greedy", "spend_limit": "5", "rpm": "10", "role": "member"}
        )
        assert refused.status_code == 403 and "greedy" not in _keys(srv, "console-team")
        # Spend against the limit is shown once the key has spent.
        assert (
            httpx.post(
                srv.text_url + "/v1/chat/completions", json=CHAT, headers=bearer(secret.group(1)), timeout=30
            ).status_code
            == 200
        )
        edited = client.post_form(
            f"/keys/{ci['id']}/edit",
            {**EMPTY, "spend_limit": "0.25", "period": "week", "rpm": "20", "role": "member"},
            csrf_from="/keys",
        )
        assert edited.status_code == 303, edited.text
        after = _keys(srv, "console-team")["ci"]
        assert (after["spend_limit_usd"], after["spend_limit_period"], after["rpm"], after["models"]) == (
            0.25,
            "week",
            20,
            None,
        )
        page = client.get("/keys").text
        assert "of 0.25 USD spent" in page and "this week" in page and "20 req/min" in page
    finally:
        client.close()


def test_the_operator_console_creates_and_edits_keys_with_limits(srv: RunningServer) -> None:
    new_team(srv, "console-op")
    client = ConsoleClient(srv.media_url)
    try:
        assert client.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
        team_id = admin(srv, "GET", "/teams/console-op").json()["data"]["id"]
        made = client.post_form(
            f"/admin/teams/{team_id}/keys",
            {**EMPTY, "name": "ops", "spend_limit": "3", "tpm": "5000", "role": "admin"},
            csrf_from=f"/admin/teams/{team_id}",
        )
        assert made.status_code == 200, made.text
        ops = _keys(srv, "console-op")["ops"]
        assert (ops["spend_limit_usd"], ops["tpm"], ops["role"], ops["spend_limit_period"]) == (
            3,
            5000,
            "admin",
            "month",
        )
        edited = client.post_form(
            f"/admin/keys/{ops['id']}/edit",
            {**EMPTY, "spend_limit": "", "tpm": "6000", "role": "member"},
            csrf_from=f"/admin/teams/{team_id}",
        )
        assert edited.status_code == 303
        after = _keys(srv, "console-op")["ops"]
        assert (after["spend_limit_usd"], after["tpm"], after["role"]) == (None, 6000, "member")
        page = client.get(f"/admin/teams/{team_id}").text
        assert "6000 tokens/min" in page
        bad = client.post_form(
            f"/admin/keys/{ops['id']}/edit",
            {**EMPTY, "rpm": "lots", "role": "member"},
            csrf_from=f"/admin/teams/{team_id}",
        )
        assert bad.status_code == 303
        assert "rpm must be a whole number" in client.get(f"/admin/teams/{team_id}").text
    finally:
        client.close()


def test_the_console_refuses_expired_keys_and_other_addresses(srv: RunningServer) -> None:
    new_team(srv, "console-rules")
    elsewhere, _ = new_key(srv, "console-rules", allowed_ips=["10.0.0.0/8"])
    expiring, expiring_id = new_key(srv, "console-rules", expires_at=4_000_000_000)
    client = ConsoleClient(srv.media_url)
    try:
        assert client.sign_in(elsewhere).status_code == 401
        assert client.sign_in(expiring).status_code == 303
        assert client.get("/").status_code == 200  # a member key: the pages every key may read
        assert admin(srv, "PATCH", f"/keys/{expiring_id}", json={"expires_at": 1}).status_code == 200
        ended = client.get("/")
        assert ended.status_code == 303 and "/sign-in" in ended.headers["location"]
        assert client.sign_in(expiring).status_code == 401
    finally:
        client.close()
