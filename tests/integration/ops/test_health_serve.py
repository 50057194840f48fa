"""`/healthz` and `/readyz` on both hosts of a real `modelport serve` (issue 15)."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.support.databases import migrated_postgres_database, postgres_admin_url
from tests.support.server import RunningServer, run_server

REDIS_URL = "redis://127.0.0.1:6379/0"


def _hosts(server: RunningServer) -> list[str]:
    return [server.media_url, server.text_url]


def _ready_eventually(url: str, status: int, timeout: float = 10) -> dict[str, Any]:
    """Readiness is cached for a second: poll until it answers `status`."""
    deadline = time.monotonic() + timeout
    while True:
        r = httpx.get(url + "/readyz", timeout=5)
        if r.status_code == status or time.monotonic() > deadline:
            assert r.status_code == status, r.text
            body: dict[str, Any] = r.json()
            return body
        time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One plain server for the tests that only read (the others change its database or stop it)."""
    with run_server(tmp_path_factory.mktemp("health")) as running:
        yield running


def test_alive_and_ready_on_both_hosts_without_credentials(server: RunningServer) -> None:
    for base in _hosts(server):
        r = httpx.get(base + "/healthz")
        assert (r.status_code, r.json()) == (200, {"status": "alive"})
        r = httpx.get(base + "/readyz")
        assert r.status_code == 200, r.text
        assert r.json() == {
            "status": "ready",
            "checks": {"database": "ok", "migrations": "ok", "storage": "ok", "redis": "not configured"},
        }


def test_openapi_documents_the_real_health_responses(server: RunningServer) -> None:
    for base in _hosts(server):
        doc = httpx.get(base + "/openapi.json").json()
        ready = doc["paths"]["/readyz"]["get"]
        assert "security" not in ready and "401" not in ready["responses"]
        for status in ("200", "503"):
            schema = ready["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Readiness"}
        readiness = doc["components"]["schemas"]["Readiness"]
        assert readiness["properties"]["status"]["enum"] == ["ready", "not ready", "draining"]
        alive = doc["paths"]["/healthz"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert alive == {"$ref": "#/components/schemas/Liveness"}
        assert "401" not in doc["paths"]["/healthz"]["get"]["responses"]


def test_readyz_fails_when_migrations_are_behind_and_passes_when_ahead(tmp_path: Path) -> None:
    with run_server(tmp_path) as server:
        _ready_eventually(server.text_url, 200)
        db = sqlite3.connect(tmp_path / "modelport.db")
        (head,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
        db.execute("UPDATE alembic_version SET version_num = '0001'")
        db.commit()
        body = _ready_eventually(server.media_url, 503)
        assert body["status"] == "not ready" and body["checks"]["migrations"] == "behind"
        assert body["checks"]["database"] == "ok"
        # A newer version migrated the database (a rolling upgrade): this older process stays ready.
        db.execute("UPDATE alembic_version SET version_num = '0099_from_a_newer_version'")
        db.commit()
        body = _ready_eventually(server.media_url, 200)
        assert body["status"] == "ready" and body["checks"]["migrations"] == "ahead"
        db.execute("UPDATE alembic_version SET version_num = ?", (head,))
        db.commit()
        deadline = time.monotonic() + 10  # the "ahead" answer may still be cached for a second
        while (body := _ready_eventually(server.media_url, 200))["checks"]["migrations"] != "ok":
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        db.close()


def test_readyz_fails_when_the_database_is_unreachable_postgres_and_redis(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with migrated_postgres_database() as url:
            with run_server(tmp_path, MODELPORT_DATABASE_URL=url, MODELPORT_REDIS_URL=REDIS_URL) as server:
                ok = await asyncio.to_thread(_ready_eventually, server.text_url, 200)
                assert ok["checks"] == {"database": "ok", "migrations": "ok", "storage": "ok", "redis": "ok"}
                # The database goes away under the running server.
                admin = make_url(postgres_admin_url()).set(drivername="postgresql")
                conn = await asyncpg.connect(admin.render_as_string(hide_password=False))
                try:
                    await conn.execute(f'DROP DATABASE "{make_url(url).database}" WITH (FORCE)')
                finally:
                    await conn.close()
                for base in _hosts(server):
                    body = await asyncio.to_thread(_ready_eventually, base, 503)
                    assert body["status"] == "not ready"
                    assert body["checks"]["database"] in ("unreachable", "timeout")
                    assert body["checks"]["redis"] == "ok" and body["checks"]["storage"] == "ok"
                    alive = await asyncio.to_thread(httpx.get, base + "/healthz")
                    assert alive.status_code == 200

    asyncio.run(scenario())


def test_readyz_answers_draining_after_sigterm_while_requests_still_succeed(tmp_path: Path) -> None:
    drain = 8.0
    with run_server(tmp_path, "--workers", "2", MODELPORT_SERVER__DRAIN_SECONDS=str(drain)) as server:
        assert server.demo_key is not None
        auth = {"Authorization": f"Bearer {server.demo_key}"}
        for base in _hosts(server):
            assert httpx.get(base + "/readyz").status_code == 200
        sent = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        # Both workers drain: every connection (spread by the kernel) sees 503 draining.
        for _ in range(2):
            for base in _hosts(server):
                with httpx.Client() as client:
                    r = client.get(base + "/readyz")
                    assert r.status_code == 503, r.text
                    assert r.json()["status"] == "draining"
                    assert client.get(base + "/healthz").status_code == 200
            models = httpx.get(server.text_url + "/v1/models", headers=auth)
            assert models.status_code == 200
        assert time.monotonic() - sent < drain
        assert server.process.wait(timeout=30) == 0
        assert time.monotonic() - sent >= drain
        try:
            httpx.get(server.media_url + "/healthz", timeout=2)
            raise AssertionError("still accepting after the drain")
        except httpx.TransportError:
            pass
