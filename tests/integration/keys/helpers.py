"""A real `modelport serve` (SQLite or PostgreSQL) with a priced fake text model, a second text model and the
shipped media models, for the per-key limit tests; admin and key helpers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.catalogs import shipped_with_fake_chat
from tests.support.databases import migrated_sqlite_file
from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "keys-admin-token-0123456789-abcdef"
# fake/chat: 1 USD input, 2 USD output per million tokens. With the fake's usage of 10 + 100 tokens a request
# costs 210 micro-USD.
COST_MICROS = 10 * 1 + 100 * 2
CHAT = {"model": "fake/chat", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]}
CONFIG = """
[[tiers]]
name = "free"
qualifying_topup_usd = "0"
inference_rpm = 100000
query_rpm = 100000
concurrent_media_tasks = 1000
concurrent_requests = 1000

[[tiers]]
name = "metered"
qualifying_topup_usd = "1000000"
inference_rpm = 100000
query_rpm = 100000
concurrent_media_tasks = 1000
concurrent_requests = 1000
tpm = 300

# Set by the admin API only (no top-up qualifies): one query a minute.
[[tiers]]
name = "one-query"
qualifying_topup_usd = "1000000000"
inference_rpm = 100000
query_rpm = 1
concurrent_media_tasks = 1000
concurrent_requests = 1000
"""


@contextmanager
def keys_server(tmp: Path, upstream: FakeUpstream, db_url: str, *args: str, **env: str) -> Iterator[RunningServer]:
    """`serve` on `db_url`: a PostgreSQL database must be at the head of the migrations already (use
    `migrated_database_url` / `migrated_postgres_database`); a SQLite file that does not exist yet starts as a
    copy of the migrated template."""
    tmp.mkdir(parents=True, exist_ok=True)
    catalog = tmp / "catalog.toml"
    catalog.write_text(
        shipped_with_fake_chat(upstream.base_url)
        + f"""
[[text_models]]
id = "other/chat"
prices = {{ input = "1", output = "2" }}
deployments = [{{ kind = "openai_chat", base_url = "{upstream.base_url}/v1", model = "up", api_key_env = "FAKE_KEY" }}]
"""
    )
    config = tmp / "config.toml"
    config.write_text(CONFIG)
    server_vars = {
        "MODELPORT_CATALOG": str(catalog),
        "MODELPORT_CONFIG": str(config),
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        "MODELPORT_DEMO_BALANCE_USD": "0",
        "MODELPORT_DATABASE_URL": db_url,
        "FAKE_KEY": "k",
        **env,
    }
    sqlite_file = Path(db_url.removeprefix("sqlite+aiosqlite:///"))
    if db_url.startswith("sqlite+aiosqlite:///") and not sqlite_file.exists():
        migrated_sqlite_file(sqlite_file)  # a copy of the migrated template: the start skips the migration run
    with run_server(tmp, *args, env=server_vars) as running:
        yield running


def admin(server: RunningServer, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(
        method,
        server.media_url + "/admin/v1" + path,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=30,
        **kw,
    )


def new_team(server: RunningServer, name: str, usd: str = "10") -> None:
    assert admin(server, "POST", "/teams", json={"name": name}).status_code == 200
    assert admin(server, "POST", f"/teams/{name}/topups", json={"amount_usd": usd}).status_code == 200


def new_key(server: RunningServer, team: str, **fields: Any) -> tuple[str, str]:
    """(secret, key id) of a new key of `team` with `fields`."""
    answer = admin(server, "POST", f"/teams/{team}/keys", json=fields)
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    return data["key"], data["id"]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
