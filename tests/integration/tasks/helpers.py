"""Shared set-up for media task tests: a local webhook receiver, servers and workers, teams, ledger checks."""

from __future__ import annotations

import asyncio
import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from modelport.accounts.tables import teams
from modelport.billing.tables import ledger_entries
from modelport.media.files.tables import media_files
from modelport.media.tasks.tables import media_tasks
from modelport.storage.db import create_engine
from modelport.webhooks.tables import webhook_deliveries
from tests.support.ports import free_port as free_port  # re-exported: the tests import it from here
from tests.support.server import RunningServer, run_server, server_env
from tests.support.stacks import modelport_stacks

ADMIN_TOKEN = "tasks-test-admin-token-0123456789"
SKETCH = "/local/sketch-image"
PRICE_MICROS = 2000  # local/sketch-image: 0.002 USD per image


@dataclass
class Received:
    headers: dict[str, str]
    body: str
    status: int = 0  # what the receiver answered


@dataclass
class WebhookReceiver:
    """A plain-HTTP receiver on 127.0.0.1 (allow-listed for the server); `answer(path, n)` picks each status."""

    port: int = field(default_factory=free_port)
    received: list[Received] = field(default_factory=list)
    answer: Callable[[str, int], tuple[int, dict[str, str]]] = lambda _path, _n: (204, {})
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str = "/hook") -> str:
        return f"http://{self.host}{path}"

    def by_task(self, *, delivered: bool = False) -> dict[str, list[Received]]:
        """What arrived per task id; `delivered`: only the requests answered 2xx."""
        out: dict[str, list[Received]] = {}
        with self._lock:
            for item in self.received:
                if delivered and not 200 <= item.status < 300:
                    continue
                out.setdefault(json.loads(item.body)["data"]["task_id"], []).append(item)
        return out

    @contextmanager
    def running(self) -> Iterator[WebhookReceiver]:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
                item = Received({k.lower(): v for k, v in self.headers.items()}, body)
                with receiver._lock:
                    receiver.received.append(item)
                    count = sum(
                        1 for r in receiver.received if r.headers.get("webhook-id") == self.headers["webhook-id"]
                    )
                status, headers = receiver.answer(self.path, count)
                item.status = status
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


def task_env(receiver: WebhookReceiver | None, public_port: int, **extra: str) -> dict[str, str]:
    env = {
        "MODELPORT_PUBLIC_MEDIA_URL": f"http://127.0.0.1:{public_port}",
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        "MODELPORT_TASKS__LEASE_SECONDS": "3",
        "MODELPORT_TASKS__RECONCILE_INTERVAL_SECONDS": "0.5",
        "MODELPORT_TASKS__REQUEUE_AFTER_SECONDS": "2",
        "MODELPORT_WEBHOOKS__SCHEDULE_SECONDS": "[0, 0.3, 0.6, 1, 1]",
        "MODELPORT_WEBHOOKS__TIMEOUT_SECONDS": "3",
        "MODELPORT_WEBHOOKS__CLAIM_SECONDS": "4",
        "MODELPORT_WEBHOOKS__POLL_INTERVAL_SECONDS": "0.2",
    }
    if receiver is not None:
        env["MODELPORT_NET__ALLOW_HOSTS"] = receiver.host
    env.update(extra)
    return env


@contextmanager
def task_server(data_dir: Path, env: dict[str, str], *args: str) -> Iterator[RunningServer]:
    port = env["MODELPORT_PUBLIC_MEDIA_URL"].rsplit(":", 1)[1]
    with run_server(data_dir, "--media-port", port, *args, env=env) as running:
        yield running


def migrate(data_dir: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "modelport", "migrate"],
        env=server_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def start_worker(data_dir: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "modelport", "worker"],
        env=server_env(data_dir, **env),
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "worker started" in line, line
    return process


def reap(process: subprocess.Popen[str], timeout: float = 60) -> None:
    """Wait for a stopped (signalled) worker and close its stdout pipe, which the GC would otherwise report
    as a ResourceWarning during a later test."""
    try:
        process.wait(timeout=timeout)
    finally:
        if process.stdout is not None:
            process.stdout.close()


def admin(server: RunningServer, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    got = httpx.request(
        method,
        f"{server.media_url}/admin/v1{path}",
        json=body,
        timeout=30,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert got.status_code == 200, got.text
    return got.json()["data"]


@dataclass
class Team:
    id: str
    name: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def make_team(server: RunningServer, name: str, *, topup_usd: str | None = None) -> Team:
    team = admin(server, "POST", "/teams", {"name": name})
    if topup_usd is not None:
        admin(server, "POST", f"/teams/{name}/topups", {"amount_usd": topup_usd})
    key: str = admin(server, "POST", f"/teams/{name}/keys", {})["key"]
    return Team(id=team["id"], name=name, key=key)


def create(
    server: RunningServer, team: Team, body: dict[str, Any], *, webhook: str | None = None, path: str = SKETCH
) -> httpx.Response:
    headers = dict(team.headers)
    if webhook is not None:
        headers["X-Webhook-URL"] = webhook
    return httpx.post(server.media_url + path, json=body, headers=headers, timeout=30)


def wait_ended(media_url: str, team: Team, task_ids: list[str], timeout: float = 120) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    ended: dict[str, dict[str, Any]] = {}
    last: dict[str, dict[str, Any]] = {}  # what each unfinished task said last, for the failure message
    while time.monotonic() < deadline:
        for task_id in task_ids:
            if task_id in ended:
                continue
            try:
                got = httpx.get(f"{media_url}/api/v1/tasks/{task_id}", headers=team.headers, timeout=30)
            except httpx.TimeoutException:
                stacks = modelport_stacks()
                raise AssertionError(f"GET task {task_id}: no answer in 30 s. The processes:\n{stacks}") from None
            assert got.status_code == 200, got.text
            data: dict[str, Any] = got.json()["data"]
            last[task_id] = data
            if data["status"] in ("success", "failed", "cancelled"):
                ended[task_id] = data
        if len(ended) == len(task_ids):
            return ended
        time.sleep(0.2)
    waiting = {t: last.get(t) for t in sorted(set(task_ids) - set(ended))}
    raise AssertionError(f"tasks did not end in {timeout} s: {waiting}. The processes:\n{modelport_stacks()}")


def wait_for(condition: Callable[[], bool], timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class LedgerReport:
    balance_micros: int
    frozen_micros: int
    entries_sum: int
    # per task id: {kind: [amounts]}
    by_task: dict[str, dict[str, list[int]]]
    statuses: dict[str, str]
    result_files: dict[str, int]  # media_files rows named after each task
    deliveries: dict[str, int]  # outbox rows per task
    claimed_by: dict[str, str | None]


def ledger_report(database_url: str, team_id: str) -> LedgerReport:
    async def read() -> LedgerReport:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as conn:
                team = (await conn.execute(select(teams).where(teams.c.id == team_id))).one()
                total = (
                    await conn.execute(
                        select(func.coalesce(func.sum(ledger_entries.c.amount_micros), 0)).where(
                            ledger_entries.c.team_id == team_id
                        )
                    )
                ).scalar_one()
                entries = (await conn.execute(select(ledger_entries).where(ledger_entries.c.team_id == team_id))).all()
                tasks = (await conn.execute(select(media_tasks).where(media_tasks.c.team_id == team_id))).all()
                files = (await conn.execute(select(media_files.c.name).where(media_files.c.team_id == team_id))).all()
                hooks = (
                    await conn.execute(
                        select(webhook_deliveries.c.task_id).where(webhook_deliveries.c.team_id == team_id)
                    )
                ).all()
        finally:
            await engine.dispose()
        by_task: dict[str, dict[str, list[int]]] = {}
        for e in entries:
            if e.ref and e.ref.startswith("task_"):
                by_task.setdefault(e.ref, {}).setdefault(e.kind, []).append(int(e.amount_micros))
        result_files: dict[str, int] = {}
        for f in files:
            task_id = f.name.rsplit("-", 1)[0]
            result_files[task_id] = result_files.get(task_id, 0) + 1
        deliveries: dict[str, int] = {}
        for h in hooks:
            deliveries[h.task_id] = deliveries.get(h.task_id, 0) + 1
        return LedgerReport(
            balance_micros=int(team.balance_micros),
            frozen_micros=int(team.frozen_micros),
            entries_sum=int(total),
            by_task=by_task,
            statuses={t.id: t.status for t in tasks},
            result_files=result_files,
            deliveries=deliveries,
            claimed_by={t.id: t.claimed_by for t in tasks},
        )

    return asyncio.run(read())


def assert_settled_once(report: LedgerReport, task_ids: list[str], *, images_per_task: int) -> None:
    """Every task ended and moved money exactly once: one freeze, one release of it, one charge on success."""
    assert report.entries_sum == report.balance_micros
    assert report.frozen_micros == 0
    price = PRICE_MICROS * images_per_task
    for task_id in task_ids:
        status = report.statuses[task_id]
        kinds = report.by_task[task_id]
        assert kinds["task_hold"] == [-price], (task_id, kinds)
        assert kinds["task_release"] == [price], (task_id, kinds)
        if status == "success":
            assert kinds["charge"] == [-price], (task_id, kinds)
            assert report.result_files.get(task_id) == images_per_task, (task_id, report.result_files.get(task_id))
        else:
            assert "charge" not in kinds, (task_id, kinds)
