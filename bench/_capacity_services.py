"""The capacity bench's private services (bench/capacity.py): a PostgreSQL cluster with pg_stat_statements
loaded, a redis-server, and moto's S3 server behind a proxy that counts requests, so that no other process's
traffic lands in the counts."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import _procs
import aiohttp
from aiohttp import web

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@contextmanager
def private_postgres() -> Iterator[str]:
    """A PostgreSQL cluster of our own with pg_stat_statements loaded; yields its root DSN (asyncpg form)."""
    folder = Path(tempfile.mkdtemp(prefix="mp-capacity-pg-"))
    port = _procs._free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"
    subprocess.run(
        [*as_user, str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "root", "-E", "UTF8"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements"
        " -c pg_stat_statements.max=10000 -c max_connections=300"
    )
    subprocess.run(
        [*as_user, str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    try:
        yield f"postgresql://root@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_user, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def postmaster_pid(dsn_root: str) -> int:
    port = dsn_root.rsplit(":", 1)[1]
    found = subprocess.run(["pgrep", "-f", f"postgres.*-p {port}"], capture_output=True, text=True, check=False)
    return min(int(p) for p in found.stdout.split())


@contextmanager
def private_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _procs._free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout.strip() != b"PONG":
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0", process
    finally:
        process.terminate()
        process.wait(timeout=10)


def redis_cli(url: str, *args: str) -> str:
    port = url.rsplit(":", 1)[1].split("/")[0]
    return subprocess.run(["redis-cli", "-p", port, *args], capture_output=True, text=True, check=True).stdout


def redis_commands(url: str) -> dict[str, int]:
    counts = {}
    for line in redis_cli(url, "INFO", "commandstats").splitlines():
        m = re.match(r"cmdstat_([^:]+):calls=(\d+)", line)
        if m and not m.group(1).startswith(("info", "config")):  # the bench's own calls
            counts[m.group(1)] = int(m.group(2))
    return counts


class S3Counter:
    """moto's S3 server behind a proxy that counts the requests by method."""

    def __init__(self) -> None:
        import logging

        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per S3 request

        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.port = _procs._free_port()

    def start(self) -> dict[str, str]:
        import botocore.session

        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self._upstream = f"http://{host}:{port}"
        threading.Thread(target=self._serve, daemon=True).start()
        self._ready.wait(10)
        bucket = "mp-capacity-" + secrets.token_hex(4)
        client: Any = botocore.session.get_session().create_client(
            "s3", endpoint_url=self._upstream, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
        )
        client.create_bucket(Bucket=bucket)
        return {
            "MODELPORT_FILES__BACKEND": "s3",
            "MODELPORT_FILES__S3_BUCKET": bucket,
            "MODELPORT_FILES__S3_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            "MODELPORT_FILES__S3_ACCESS_KEY_ID": "k",
            "MODELPORT_FILES__S3_SECRET_ACCESS_KEY": "s",
            "MODELPORT_FILES__S3_ADDRESSING_STYLE": "path",
        }

    def _serve(self) -> None:
        async def forward(request: web.Request) -> web.Response:
            with self._lock:
                self.counts[request.method] = self.counts.get(request.method, 0) + 1
            body = await request.read()
            headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
            async with aiohttp.ClientSession(auto_decompress=False) as session:
                url = self._upstream + request.path_qs
                async with session.request(request.method, url, data=body, headers=headers) as answer:
                    payload = await answer.read()
                    out = {
                        k: v
                        for k, v in answer.headers.items()
                        if k.lower() not in ("content-length", "transfer-encoding")
                    }
                    return web.Response(status=answer.status, body=payload, headers=out)

        async def main() -> None:
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", forward)
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            self._ready.set()
            await asyncio.Event().wait()

        asyncio.run(main())

    def total(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)

    def stop(self) -> None:
        self._moto.stop()
