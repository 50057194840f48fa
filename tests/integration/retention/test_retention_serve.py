"""Retention through a real `modelport serve` (issue 23, "Done when"), on SQLite and PostgreSQL.

Windows of seconds (`MODELPORT_RETENTION__REQUEST_LOGS_DAYS=0.0002` is ~17 s, the pruner every 2 s):
requests appear in `GET /v1/logs`, lose their payloads, then leave it within a minute while `total` always
equals the rows listed; the usage page's CSV is unchanged; the archive holds exactly the rows that left; a
team's own window (forever via the CLI, a day via the admin API) keeps its rows; finished tasks leave with
their webhook rows while their ledger entries stay.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from modelport.accounts.tables import teams
from modelport.billing.tables import ledger_entries
from modelport.media.tasks.tables import media_tasks
from modelport.storage.db import create_engine
from modelport.webhooks.tables import webhook_attempts, webhook_deliveries
from tests.integration.gateway.conftest import CONFIG_TOML, catalog_toml
from tests.integration.tasks.helpers import (
    ADMIN_TOKEN,
    Team,
    WebhookReceiver,
    admin,
    create,
    free_port,
    make_team,
    task_env,
    task_server,
    wait_ended,
    wait_for,
)
from tests.support.console import ConsoleClient
from tests.support.databases import migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream
from tests.support.server import RunningServer

SKETCH_ENTRY = """
[[media_models]]
slug = "local/sketch-image"
type = "text-to-image"
description = "sketch"
docs_url = "/docs/models/local/sketch-image"
runner = "sketch"
price_usd = "0.002"
price_unit = "image"
deadline_seconds = 120
"""
RETENTION_ENV = {
    "MODELPORT_RETENTION__REQUEST_LOGS_DAYS": "0.0002",  # 17.3 s
    "MODELPORT_RETENTION__LOG_PAYLOADS_DAYS": "0.0001",  # 8.6 s
    "MODELPORT_RETENTION__TASKS_DAYS": "0.0002",
    "MODELPORT_RETENTION__INTERVAL_SECONDS": "2",
    "MODELPORT_RETENTION__ARCHIVE": "true",
    "MODELPORT_RETENTION__BATCH_ROWS": "2",  # several batches per run: the batched path is what runs
    "MODELPORT_TASKS__RESULT_RETENTION_SECONDS": "1",
    "MODELPORT_DEMO_BALANCE_USD": "5",
}
REQUESTS = 5


def logs(server: RunningServer, team: Team) -> dict[str, Any]:
    now = int(time.time())
    got = httpx.get(
        server.text_url + "/v1/logs",
        params={"start_time": now - 3600, "end_time": now + 3600, "page_size": 100},
        headers=team.headers,
        timeout=30,
    )
    assert got.status_code == 200, got.text
    page: dict[str, Any] = got.json()
    # The count GET /v1/logs reports always agrees with the rows it lists, before, during and after pruning.
    assert page["total"] == len(page["requests"]), page
    return page


def chat(server: RunningServer, team: Team, n: int) -> None:
    for i in range(n):
        got = httpx.post(
            server.text_url + "/v1/chat/completions",
            json={"model": "fake/chat", "messages": [{"role": "user", "content": f"hello {i}"}]},
            headers=team.headers,
            timeout=30,
        )
        assert got.status_code == 200, got.text


def usage_csv(server: RunningServer, team: Team) -> str:
    console = ConsoleClient(server.media_url)
    try:
        assert console.sign_in(team.key).status_code == 303
        got = console.get("/usage.csv", params={"days": "30"})
        assert got.status_code == 200, got.text
        return got.text
    finally:
        console.close()


def archived_rows(data_dir: Path, team_id: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((data_dir / "media" / "archive" / "request_logs" / team_id).rglob("*.jsonl.gz")):
        rows.extend(json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines())
    return rows


def task_rows(database_url: str, team_id: str, task_ids: list[str]) -> dict[str, int]:
    async def read() -> dict[str, int]:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as conn:
                deliveries = select(webhook_deliveries.c.id).where(webhook_deliveries.c.task_id.in_(task_ids))
                team = (await conn.execute(select(teams.c.balance_micros).where(teams.c.id == team_id))).scalar_one()
                ledger = select(func.coalesce(func.sum(ledger_entries.c.amount_micros), 0))
                return {
                    "tasks": await conn.scalar(select(func.count()).where(media_tasks.c.id.in_(task_ids))) or 0,
                    "deliveries": await conn.scalar(select(func.count()).select_from(deliveries.subquery())) or 0,
                    "attempts": await conn.scalar(
                        select(func.count()).where(webhook_attempts.c.delivery_id.in_(deliveries))
                    )
                    or 0,
                    "task_entries": await conn.scalar(select(func.count()).where(ledger_entries.c.ref.in_(task_ids)))
                    or 0,
                    "balance_minus_ledger": int(team)
                    - int(await conn.scalar(ledger.where(ledger_entries.c.team_id == team_id)) or 0),
                }
        finally:
            await engine.dispose()

    return asyncio.run(read())


def check_bad_windows(server: RunningServer) -> None:
    for bad in (-1, 40_000, "x"):
        got = httpx.patch(
            f"{server.media_url}/admin/v1/teams/longer",
            json={"log_days": bad},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30,
        )
        assert got.status_code == 400, (bad, got.text)
    cli = server.cli("admin", "team", "set", "longer", "--log-days", "soon")
    assert cli.returncode != 0 and "log_days" in cli.stderr
    assert admin(server, "GET", "/teams/longer")["log_days"] == 1  # unchanged by the refusals


def check_console(server: RunningServer, team: Team) -> None:
    """The operator console shows the figures and sets a team's window (then puts it back)."""
    console = ConsoleClient(server.media_url)
    try:
        assert console.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
        page = console.get("/admin/retention")
        assert page.status_code == 200 and 'data-table="request_logs"' in page.text and "longer" in page.text
        set_it = console.post_form(
            f"/admin/teams/{team.id}/log-days", {"log_days": "2.5"}, csrf_from=f"/admin/teams/{team.id}"
        )
        assert set_it.status_code == 303
        assert admin(server, "GET", f"/teams/{team.name}")["log_days"] == 2.5
        refused = console.post_form(
            f"/admin/teams/{team.id}/log-days", {"log_days": "-3"}, csrf_from=f"/admin/teams/{team.id}"
        )
        assert refused.status_code == 303 and admin(server, "GET", f"/teams/{team.name}")["log_days"] == 2.5
        assert "between 0" in console.get(f"/admin/teams/{team.id}").text  # the refusal's message
        console.post_form(f"/admin/teams/{team.id}/log-days", {"log_days": "1"}, csrf_from=f"/admin/teams/{team.id}")
    finally:
        console.close()


def run(tmp_path: Path, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    with FakeUpstream() as upstream, WebhookReceiver().running() as receiver:
        (tmp_path / "catalog.toml").write_text(catalog_toml(upstream.base_url) + SKETCH_ENTRY)
        (tmp_path / "config.toml").write_text(CONFIG_TOML)
        env = task_env(
            receiver,
            free_port(),
            MODELPORT_CATALOG=str(tmp_path / "catalog.toml"),
            MODELPORT_CONFIG=str(tmp_path / "config.toml"),
            FAKE_UPSTREAM_KEY="k",
            **RETENTION_ENV,
        )
        if database_url is not None:
            env["MODELPORT_DATABASE_URL"] = database_url
        url = database_url or f"sqlite+aiosqlite:///{data_dir / 'modelport.db'}"
        with task_server(data_dir, env) as server:
            short = make_team(server, "short", topup_usd="5")
            keeper = make_team(server, "keeper", topup_usd="5")
            longer = make_team(server, "longer", topup_usd="5")
            # A team's own window: forever through the CLI, a day through the admin API.
            cli = server.cli("admin", "team", "set", "keeper", "--log-days", "0", "--json")
            assert cli.returncode == 0, cli.stderr
            assert json.loads(cli.stdout)["log_days"] == 0
            assert admin(server, "PATCH", "/teams/longer", {"log_days": 1, "log_retention": True})["log_days"] == 1
            assert admin(server, "PATCH", "/teams/short", {"log_retention": True})["log_days"] is None
            check_bad_windows(server)

            made = [create(server, short, {"prompt": f"p{i}"}, webhook=receiver.url()) for i in range(2)]
            assert all(m.status_code == 200 for m in made), [m.text for m in made]
            task_ids = [m.json()["data"]["task_id"] for m in made]
            # Ended and delivered (they stay ~17 s after ending).
            ended = wait_ended(server.media_url, short, task_ids)
            assert {t["status"] for t in ended.values()} == {"success"}
            wait_for(lambda: len(receiver.by_task(delivered=True)) == 2, what="webhooks delivered")
            seen = task_rows(url, short.id, task_ids)
            assert seen["tasks"] == 2 and seen["deliveries"] == 2 and seen["attempts"] >= 2, seen

            for team in (short, keeper, longer):
                chat(server, team, REQUESTS)
            wait_for(lambda: logs(server, short)["total"] == REQUESTS, what="short's log rows")
            first = logs(server, short)["requests"]
            assert all(r["input"] is not None for r in first), first
            short_ids = {r["task_id"] for r in first}
            before = usage_csv(server, short)
            assert f",{REQUESTS}," in before

            # Payloads leave first: the rows stay, input and result become null.
            wait_for(
                lambda: all(r["input"] is None and r["result"] is None for r in logs(server, short)["requests"]),
                timeout=60,
                what="payloads emptied",
            )
            assert logs(server, short)["total"] == REQUESTS
            # Then the rows, within a minute.
            wait_for(lambda: logs(server, short)["total"] == 0, timeout=60, what="short's rows pruned")
            assert logs(server, keeper)["total"] == REQUESTS
            assert logs(server, longer)["total"] == REQUESTS
            assert usage_csv(server, short) == before  # the rollups are kept

            archived = archived_rows(data_dir, short.id)
            assert sorted(r["id"] for r in archived) == sorted(short_ids)
            assert {r["team_id"] for r in archived} == {short.id}
            assert all(r["input"] is None for r in archived)  # payloads had gone before the rows
            assert archived_rows(data_dir, keeper.id) == []

            # Tasks: gone with their webhook rows; their money's record stays.
            def gone() -> bool:
                answers = [
                    httpx.get(f"{server.media_url}/api/v1/tasks/{t}", headers=short.headers, timeout=30).status_code
                    for t in task_ids
                ]
                return answers == [404, 404]

            wait_for(gone, timeout=90, what="tasks pruned")
            left = task_rows(url, short.id, task_ids)
            assert left["tasks"] == left["deliveries"] == left["attempts"] == 0, left
            assert left["task_entries"] == seen["task_entries"] > 0
            assert left["balance_minus_ledger"] == 0

            # The export streams a window still in the database, the same lines as the archive.
            keeper_ids = {r["task_id"] for r in logs(server, keeper)["requests"]}
            exported = tmp_path / "keeper.jsonl.gz"
            since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
            until = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() + 60))
            done = server.cli(
                "admin",
                "logs",
                "export",
                "--team",
                "keeper",
                "--since",
                since,
                "--until",
                until,
                "--out",
                str(exported),
            )
            assert done.returncode == 0, done.stderr
            lines = [json.loads(line) for line in gzip.decompress(exported.read_bytes()).splitlines()]
            assert {r["id"] for r in lines} == keeper_ids and {r["team_id"] for r in lines} == {keeper.id}
            assert [r["created_at_ms"] for r in lines] == sorted(r["created_at_ms"] for r in lines)
            empty = server.cli("admin", "logs", "export", "--team", "short", "--since", since, "--until", until)
            assert empty.returncode == 0 and empty.stdout == ""
            bad = server.cli("admin", "logs", "export", "--team", "keeper", "--since", "yesterday", "--until", until)
            assert bad.returncode != 0 and "ISO 8601" in bad.stderr

            check_console(server, longer)
            figures = admin(server, "GET", "/retention")
            assert figures["pruned"]["request_logs"] >= REQUESTS
            assert figures["pruned"]["media_tasks"] >= 2 and figures["pruned"]["webhook_attempts"] >= 2
            assert figures["archive_files"] >= 1 and figures["database_bytes"] > 0
            assert figures["settings"]["request_logs_days"] == 0.0002


def test_retention_on_sqlite(tmp_path: Path) -> None:
    run(tmp_path, None)


def test_retention_on_postgres(tmp_path: Path) -> None:
    async def on_postgres() -> None:
        async with migrated_postgres_database() as url:
            await asyncio.to_thread(run, tmp_path, url)

    asyncio.run(on_postgres())
