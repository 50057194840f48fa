"""Backup under load and restore (issue 23 item 4), on SQLite and PostgreSQL.

SQLite: `modelport admin backup PATH --with-files` while requests, top-ups and tasks keep arriving; the
backup directory is a data directory. PostgreSQL: the procedure docs/deploy.md gives (pg_dump in the custom
format while serving, the local file store and the secret key copied, pg_restore into a fresh database).
The restored copy is served by a fresh `modelport serve`: every team's balance equals its ledger, every
log row, task and file from before the backup is there, and the files download.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from modelport.accounts.tables import teams
from modelport.billing.tables import ledger_entries
from modelport.media.tasks.tables import media_tasks
from modelport.requestlog.tables import request_logs
from modelport.storage.db import create_engine
from tests.integration.gateway.conftest import CONFIG_TOML, catalog_toml
from tests.integration.retention.test_retention_serve import SKETCH_ENTRY
from tests.integration.tasks.helpers import (
    Team,
    admin,
    create,
    free_port,
    make_team,
    task_env,
    task_server,
    wait_ended,
)
from tests.support import media_make
from tests.support.databases import migrated_postgres_database, postgres_database
from tests.support.fake_upstream import FakeUpstream
from tests.support.server import server_env


class Load:
    """Chat requests and top-ups from a thread until stopped: the database is written during the backup."""

    def __init__(self, text_url: str, media_url: str, team: Team) -> None:
        self.text_url, self.media_url, self.team = text_url, media_url, team
        self.stop = threading.Event()
        self.sent = 0
        self.failures: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                got = client.post(
                    self.text_url + "/v1/chat/completions",
                    json={"model": "fake/chat", "messages": [{"role": "user", "content": f"load {self.sent}"}]},
                    headers=self.team.headers,
                )
                if got.status_code != 200:
                    self.failures.append(got.text)
                self.sent += 1

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)


def snapshot(database_url: str) -> dict[str, Any]:
    """What must survive: log ids, task ids, and every team's balance against its ledger."""

    async def read() -> dict[str, Any]:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as conn:
                sums = dict(
                    (
                        await conn.execute(
                            select(ledger_entries.c.team_id, func.sum(ledger_entries.c.amount_micros)).group_by(
                                ledger_entries.c.team_id
                            )
                        )
                    ).all()
                )
                return {
                    "logs": set((await conn.scalars(select(request_logs.c.id))).all()),
                    "tasks": set((await conn.scalars(select(media_tasks.c.id))).all()),
                    "balances": {
                        team_id: (int(balance), int(sums.get(team_id) or 0))
                        for team_id, balance in (await conn.execute(select(teams.c.id, teams.c.balance_micros))).all()
                    },
                }
        finally:
            await engine.dispose()

    return asyncio.run(read())


def setup(tmp_path: Path, upstream: FakeUpstream, database_url: str | None, data_dir: Path) -> dict[str, str]:
    (tmp_path / "catalog.toml").write_text(catalog_toml(upstream.base_url) + SKETCH_ENTRY)
    (tmp_path / "config.toml").write_text(CONFIG_TOML)
    env = task_env(
        None,
        free_port(),
        MODELPORT_CATALOG=str(tmp_path / "catalog.toml"),
        MODELPORT_CONFIG=str(tmp_path / "config.toml"),
        FAKE_UPSTREAM_KEY="k",
    )
    if database_url is not None:
        env["MODELPORT_DATABASE_URL"] = database_url
    return env


def pg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def run(tmp_path: Path, database_url: str | None, restored_url: str | None) -> None:
    data_dir, backup_dir = tmp_path / "data", tmp_path / "backup"
    png = media_make.image(40, 30)
    with FakeUpstream() as upstream:
        env = setup(tmp_path, upstream, database_url, data_dir)
        url = database_url or f"sqlite+aiosqlite:///{data_dir / 'modelport.db'}"
        with task_server(data_dir, env) as server:
            team = make_team(server, "busy", topup_usd="20")
            up = httpx.post(
                server.media_url + "/api/v1/media/files",
                headers=team.headers,
                files={"file": ("pic.png", png, "image/png")},
                timeout=30,
            )
            assert up.status_code == 200, up.text
            file_id = up.json()["data"]["file_id"]
            task_ids = [create(server, team, {"prompt": f"t{i}"}).json()["data"]["task_id"] for i in range(2)]
            wait_ended(server.media_url, team, task_ids)
            with Load(server.text_url, server.media_url, team) as load:
                while load.sent < 20:
                    time.sleep(0.1)
                time.sleep(0.5)  # the log writer's batches reach the database within 200 ms
                before = snapshot(url)
                admin(server, "POST", f"/teams/{team.name}/topups", {"amount_usd": "1", "note": "during backup"})
                if database_url is None:
                    done = server.cli("admin", "backup", str(backup_dir), "--with-files")
                    assert done.returncode == 0, done.stderr
                else:
                    # docs/deploy.md: pg_dump while serving, then the file store and the secret key.
                    backup_dir.mkdir()
                    subprocess.run(
                        ["pg_dump", "-Fc", "-f", str(backup_dir / "modelport.dump"), pg_dsn(database_url)], check=True
                    )
                    shutil.copytree(data_dir / "media", backup_dir / "media")
                    shutil.copy2(data_dir / "secret_key", backup_dir / "secret_key")
                sent_by_backup = load.sent
            assert sent_by_backup > 20 and not load.failures, load.failures[:3]
        assert before["logs"] and before["tasks"] == set(task_ids)

        # Restore into a fresh data directory (and, on PostgreSQL, a fresh database) and serve it.
        fresh = tmp_path / "restored"
        if restored_url is None:
            shutil.copytree(backup_dir, fresh)
            assert not (fresh / "modelport.db-wal").exists()
            env.pop("MODELPORT_DATABASE_URL", None)
            after_url = f"sqlite+aiosqlite:///{fresh / 'modelport.db'}"
        else:
            fresh.mkdir()
            shutil.copytree(backup_dir / "media", fresh / "media")
            shutil.copy2(backup_dir / "secret_key", fresh / "secret_key")
            subprocess.run(
                ["pg_restore", "--no-owner", "-d", pg_dsn(restored_url), str(backup_dir / "modelport.dump")], check=True
            )
            env["MODELPORT_DATABASE_URL"] = after_url = restored_url
        env["MODELPORT_PUBLIC_MEDIA_URL"] = f"http://127.0.0.1:{free_port()}"
        with task_server(fresh, env) as server:
            after = snapshot(after_url)
            assert before["logs"] <= after["logs"], len(before["logs"] - after["logs"])
            assert after["tasks"] == before["tasks"]
            for team_id, (balance, ledger) in after["balances"].items():
                assert balance == ledger, team_id
            assert set(before["balances"]) == set(after["balances"])
            listed = httpx.get(
                f"{server.media_url}/api/v1/media/files", params={"limit": 100}, headers=team.headers, timeout=30
            )
            assert listed.status_code == 200, listed.text
            (pic,) = [f for f in listed.json()["data"]["files"] if f["file_id"] == file_id]
            assert httpx.get(pic["download_url"], timeout=30).content == png
            for task in wait_ended(server.media_url, team, task_ids).values():
                for resource in task["result"]["resources"]:
                    got = httpx.get(resource["url"], timeout=30)
                    assert got.status_code == 200 and got.content.startswith(b"\x89PNG")
            # The restored service serves: a new request is logged and charged.
            more = httpx.post(
                server.text_url + "/v1/chat/completions",
                json={"model": "fake/chat", "messages": [{"role": "user", "content": "after restore"}]},
                headers=team.headers,
                timeout=30,
            )
            assert more.status_code == 200, more.text


def test_backup_under_load_and_restore_on_sqlite(tmp_path: Path) -> None:
    run(tmp_path, None, None)


def test_backup_under_load_and_restore_on_postgres(tmp_path: Path) -> None:
    async def on_postgres() -> None:
        async with migrated_postgres_database() as url, postgres_database() as restored:
            await asyncio.to_thread(run, tmp_path, url, restored)

    asyncio.run(on_postgres())


def test_backup_refuses_a_non_empty_target_and_postgres(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "x").write_text("x")
    env = server_env(tmp_path / "data")
    taken = subprocess.run(
        [sys.executable, "-m", "modelport", "admin", "backup", str(target)], env=env, capture_output=True, text=True
    )
    assert taken.returncode != 0 and "not empty" in taken.stderr
    env["MODELPORT_DATABASE_URL"] = "postgresql+asyncpg://root@127.0.0.1:5432/test"
    pg = subprocess.run(
        [sys.executable, "-m", "modelport", "admin", "backup", str(tmp_path / "b")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert pg.returncode != 0 and "pg_dump" in pg.stderr
