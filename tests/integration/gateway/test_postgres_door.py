"""NUL bytes and schema fuzzing against a real `modelport serve` on PostgreSQL (issue 9 item 8).

PostgreSQL rejects NUL in text (SQLite stores it), so the PostgreSQL-only 500s are looked for here: NULs in
path parameters, query values and JSON string fields of every host, then the schemathesis run of both
documents on this database.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import ADMIN_TOKEN, CONFIG_TOML, catalog_toml
from tests.integration.gateway.test_fuzz_openapi import fuzz
from tests.support.databases import migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer, run_server

NUL = "a\x00b"


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("pg-door")
    loop = asyncio.new_event_loop()
    database = migrated_postgres_database()
    url = loop.run_until_complete(database.__aenter__())
    try:
        with FakeUpstream() as upstream:
            (tmp / "catalog.toml").write_text(catalog_toml(upstream.base_url))
            (tmp / "config.toml").write_text(CONFIG_TOML)
            env = {
                "MODELPORT_DATABASE_URL": url,
                "MODELPORT_CATALOG": str(tmp / "catalog.toml"),
                "MODELPORT_CONFIG": str(tmp / "config.toml"),
                "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
                "MODELPORT_DEMO_BALANCE_USD": "50",
                "FAKE_UPSTREAM_KEY": "k",
            }
            with run_server(tmp, env=env) as server:
                yield server
    finally:
        loop.run_until_complete(database.__aexit__(None, None, None))
        loop.close()


def admin(server: RunningServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def user(server: RunningServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.demo_key}"}


def probes(server: RunningServer) -> list[tuple[str, str, dict[str, str], dict[str, Any] | None]]:
    m, t = server.media_url, server.text_url
    return [
        ("GET", f"{m}/api/v1/media/files/file%00x", user(server), None),
        ("DELETE", f"{m}/api/v1/media/files/file%00x", user(server), None),
        ("GET", f"{m}/api/v1/tasks/task%00x", user(server), None),
        ("GET", f"{m}/api/v1/tasks?status=a%00b", user(server), None),
        ("GET", f"{m}/api/v1/media/providers/p%00/assets", user(server), None),
        ("GET", f"{m}/admin/v1/teams/t%00x/keys", admin(server), None),
        ("POST", f"{m}/admin/v1/keys/k%00x/revoke", admin(server), None),
        ("POST", f"{m}/admin/v1/teams", admin(server), {"name": NUL}),
        ("POST", f"{m}/admin/v1/teams/demo/keys", admin(server), {"name": NUL}),
        ("PUT", f"{m}/admin/v1/teams/demo/tier", admin(server), {"tier": NUL}),
        ("PUT", f"{m}/admin/v1/models/x%00y", admin(server), {"active": True}),
        ("POST", f"{m}/api/v1/media/providers/vendorA/assets", user(server), {"url": "https://e.com/" + NUL}),
        ("POST", f"{m}/local/sketch-image", user(server), {"prompt": NUL}),
        ("POST", f"{m}/a%00b/model", user(server), {"prompt": "x"}),
        ("GET", f"{t}/v1/models/fake%00chat", user(server), None),
        ("GET", f"{t}/v1/logs?start_time=1&end_time=2&svc_user_id=a%00bcdefghi", user(server), None),
        (
            "POST",
            f"{t}/v1/chat/completions",
            {**user(server), "X-Svc-User-Id": "abcdefgh"},
            {"model": "fake/ch\x00at", "messages": [{"role": "user", "content": NUL}]},
        ),
        (
            "POST",
            f"{t}/v1/messages",
            user(server),
            {"model": "fake/claude", "max_tokens": 5, "messages": [{"role": "user", "content": NUL}], "system": NUL},
        ),
        (
            "POST",
            f"{t}/v1/responses",
            user(server),
            {"model": "fake/chat", "input": NUL, "metadata": {NUL: NUL}, "user": NUL},
        ),
        # Server-kept Responses state (issue 43): ids with a NUL are ids no row has.
        ("POST", f"{t}/v1/responses", user(server), {"model": "fake/chat", "input": "x", "previous_response_id": NUL}),
        ("POST", f"{t}/v1/responses", user(server), {"model": "fake/chat", "input": "x", "conversation": NUL}),
        ("GET", f"{t}/v1/responses/resp%00x", user(server), None),
        ("GET", f"{t}/v1/responses/resp%00x/input_items", user(server), None),
        ("DELETE", f"{t}/v1/responses/resp%00x", user(server), None),
        ("POST", f"{t}/v1/conversations", user(server), {"items": [{"id": NUL, "role": "user", "content": NUL}]}),
        ("GET", f"{t}/v1/conversations/conv%00x", user(server), None),
        ("GET", f"{t}/v1/conversations/conv%00x/items/i%00", user(server), None),
        ("DELETE", f"{t}/v1/conversations/conv%00x/items/i%00", user(server), None),
    ]


def test_nul_anywhere_is_never_a_500_on_postgres(pg_server: RunningServer) -> None:
    failures = []
    for method, url, headers, body in probes(pg_server):
        r = httpx.request(method, url, headers=headers, json=body, timeout=30)
        if r.status_code >= 500:
            failures.append(f"{method} {url} -> {r.status_code} {r.text[:200]}")
    assert not failures, "\n".join(failures)


def test_every_text_request_with_a_nul_gets_its_log_row_on_postgres(pg_server: RunningServer) -> None:
    now = int(time.time())
    r = httpx.post(
        pg_server.text_url + "/v1/chat/completions",
        json={"model": "fake/ch\x00at-logged", "messages": [{"role": "user", "content": "x"}]},
        headers=user(pg_server),
    )
    assert r.status_code == 404
    rows: list[dict[str, Any]] = []
    for _ in range(50):
        rows = httpx.get(
            pg_server.text_url + "/v1/logs",
            params={"start_time": now - 60, "end_time": now + 60, "page_size": 100},
            headers=user(pg_server),
        ).json()["requests"]
        if any(row["model"]["model_name"] == "ch\ufffdat-logged" for row in rows):
            return
        time.sleep(0.1)
    raise AssertionError(rows)


def test_schema_fuzzing_on_postgres(pg_server: RunningServer) -> None:
    failures = fuzz(pg_server.media_url, lambda path: ADMIN_TOKEN if path.startswith("/admin/") else pg_server.demo_key)
    failures += fuzz(pg_server.text_url, lambda _path: pg_server.demo_key)
    assert not failures, "\n\n".join(failures)
