"""Issue 33 item 11, through a real `modelport serve`: an audit event's `client` is the address the server
takes as the client's. Behind a trusted proxy (`MODELPORT_SERVER__TRUSTED_PROXIES`) that is the forwarded
address, on the admin API, the keys API and the team console; from a proxy that is not trusted the forwarded
header changes nothing and the connection's address is recorded (docs/api/audit.md)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.integration.keys.helpers import ADMIN_TOKEN, admin, bearer, keys_server
from tests.support.console import ConsoleClient
from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer

FORWARDED = "203.0.113.7"


def audit_clients(srv: RunningServer, team: str) -> dict[str, set[str | None]]:
    answer = admin(srv, "GET", "/audit", params={"team": team})
    assert answer.status_code == 200, answer.text
    found: dict[str, set[str | None]] = {}
    for event in answer.json()["data"]["events"]:
        found.setdefault(event["actor"]["kind"], set()).add(event["client"])
    return found


@pytest.mark.parametrize("trusted", [True, False])
def test_audit_client_is_the_forwarded_address_only_behind_a_trusted_proxy(trusted: bool, tmp_path: Path) -> None:
    env = {"MODELPORT_SERVER__TRUSTED_PROXIES": "127.0.0.1, ::1"} if trusted else {}
    forwarded = {"X-Forwarded-For": FORWARDED}
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'audit.db'}"
    with FakeUpstream() as upstream, keys_server(tmp_path, upstream, db_url, **env) as srv:
        operator = {"Authorization": f"Bearer {ADMIN_TOKEN}", **forwarded}
        for path, body in (("/teams", {"name": "proxied"}), ("/teams/proxied/keys", {"role": "admin"})):
            answer = httpx.post(srv.media_url + "/admin/v1" + path, json=body, headers=operator, timeout=30)
            assert answer.status_code == 200, answer.text
        boss = answer.json()["data"]["key"]
        made = httpx.post(
            srv.media_url + "/api/v1/keys", json={"name": "app"}, headers={**bearer(boss), **forwarded}, timeout=30
        )
        assert made.status_code == 200, made.text
        console = ConsoleClient(srv.media_url)
        console.http.headers.update(forwarded)
        try:
            assert console.sign_in(boss).status_code == 303
            form = {"name": "web", "spend_limit": "", "period": "month", "models": "", "rpm": "", "role": "member"}
            assert console.post_form("/keys", form).status_code == 201
        finally:
            console.close()
        clients = audit_clients(srv, "proxied")
    expected = FORWARDED if trusted else "127.0.0.1"
    for kind in ("operator_token", "team_key", "team_console"):
        assert clients.get(kind) == {expected}, (kind, clients)
