"""What one request of each kind costs the shared services (docs/deploy.md, "Capacity model"), with 1, 2 and 4
`serve --no-workers` replicas on one PostgreSQL, one Redis and one S3 store (issue 41).

    nice -n 10 .venv/bin/python bench/capacity.py [--replicas 1,2,4] [--requests 300] [--json out.json]

Everything it measures runs privately, so no other process's traffic lands in the counts: a PostgreSQL
cluster of its own (initdb in a temporary directory, `shared_preload_libraries = pg_stat_statements`, run as
the `postgres` user when started as root), a `redis-server` of its own, moto's S3 server behind a counting
proxy, and bench/fake_upstream.py (50 ms, 16 chunks for streams). Per kind (fast path, translated, stream,
media task creation, log query) it resets the counters, sends the requests spread round-robin over the
replicas (16 in flight), waits for the batched writes to land, and reads:

- PostgreSQL: statements and rows written (`pg_stat_statements` of the gateway's database: calls, and rows
  of INSERT/UPDATE/DELETE), WAL bytes (the cluster's `pg_current_wal_lsn()` delta: nothing else writes to
  it), WAL syncs (`pg_stat_wal.wal_sync`: the fsyncs a disk must absorb), execution time and the server's
  CPU (its process tree, from /proc);
- Redis: commands (`INFO commandstats` after `CONFIG RESETSTAT`) and its CPU;
- S3: requests through the proxy, by method;
- the gateway: CPU seconds of every replica's process tree.

What the replicas do when idle (catalog refresh, credit renewals and sweeps, queue polls) is measured first
and subtracted, per second, from each phase; it is reported on its own as the fixed cost of a replica.
Counts per request do not depend on the machine's load; CPU figures are CPU-seconds per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import _procs
import aiohttp
import asyncpg
from _capacity_services import S3Counter, postmaster_pid, private_postgres, private_redis, redis_cli, redis_commands

DATABASE = "modelport"
CONCURRENCY = 16
SETTLE_SECONDS = 1.5  # the log and settlement writers flush every 200 ms; stats need a moment more
IDLE_SECONDS = 10.0
CHAT = {"messages": [{"role": "user", "content": "Say something."}], "max_tokens": 16}
LOAD_SECONDS: dict[str, float] = {}  # the last load's duration per kind
KINDS = ("fast", "translated", "stream", "task", "logs")
TIERS = """
[[tiers]]
name = "bench"
qualifying_topup_usd = "0"
inference_rpm = 100000000
query_rpm = 100000000
concurrent_media_tasks = 100000000
concurrent_requests = 100000
"""


# ---------------------------------------------------------------- the replicas


@dataclass
class Replica:
    proc: _procs.Proc
    media_url: str


def start_replicas(count: int, base: Path, env: dict[str, str], fake_url: str) -> tuple[list[Replica], str]:
    """`count` replicas of `serve --no-workers --workers 1` on the shared services; (replicas, demo key)."""
    shipped = (_procs.REPO / "src/modelport/default_catalog.toml").read_text()
    replicas: list[Replica] = []
    key = None
    for i in range(count):
        data_dir = base / f"replica{i}"
        data_dir.mkdir(mode=0o700, parents=True)
        catalog = data_dir / "catalog.toml"
        catalog.write_text(shipped + _procs.catalog_toml(fake_url))
        config = data_dir / "config.toml"
        config.write_text(TIERS)
        full = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
        full.update(env)
        full.update(
            {
                "MODELPORT_DATA_DIR": str(data_dir),
                "MODELPORT_CATALOG": str(catalog),
                "MODELPORT_CONFIG": str(config),
                "MODELPORT_DEMO_BALANCE_USD": "1000000",
                "MODELPORT_LOG_LEVEL": "WARNING",
            }
        )
        if i == 0:
            subprocess.run([sys.executable, "-m", "modelport", "migrate"], env=full, cwd=_procs.REPO, check=True)
        process = subprocess.Popen(
            [sys.executable, "-m", "modelport", "serve", "--no-workers", "--workers", "1",
             "--media-port", "0", "--text-port", "0"],
            stdout=subprocess.PIPE, text=True, env=full, cwd=_procs.REPO,
        )  # fmt: skip
        lines = _procs._read_lines_until(process, re.compile(r"^(demo API key:|demo team )"), 120)
        text = next(m.group(1) for line in lines if (m := re.match(r"^text gateway:\s+(http://\S+)", line)))
        media = next(m.group(1) for line in lines if (m := re.match(r"^media host:\s+(http://\S+)", line)))
        if key is None:
            key = next(m.group(1) for line in lines if (m := re.match(r"^demo API key:\s+(\S+)", line)))
        _procs.wait_first_chat(text, "bench/fast", key, process, 60)
        replicas.append(Replica(_procs.Proc(f"replica {i}", process, text), media))
    assert key is not None
    return replicas, key


def _request(kind: str, replica: Replica) -> tuple[str, str, bytes | None]:
    if kind == "task":
        body = {"prompt": "a lighthouse", "width": 256, "height": 256}
        return "POST", replica.media_url + "/local/sketch-image", json.dumps(body).encode()
    if kind == "logs":
        now = int(time.time())
        return "GET", replica.proc.url + f"/v1/logs?start_time={now - 3600}&end_time={now + 60}&limit=20", None
    model = {"fast": "bench/fast", "translated": "bench/translated", "stream": "bench/fast"}[kind]
    body = {**CHAT, "model": model, **({"stream": True} if kind == "stream" else {})}
    return "POST", replica.proc.url + "/v1/chat/completions", json.dumps(body).encode()


async def load(kind: str, replicas: list[Replica], key: str, count: int) -> int:
    """`count` requests of `kind`, round-robin over the replicas, CONCURRENCY in flight; returns the 200s."""
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    answered = 0
    started = time.monotonic()
    queue = iter(range(count))
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def worker() -> None:
            nonlocal answered
            for i in queue:
                method, url, body = _request(kind, replicas[i % len(replicas)])
                async with session.request(method, url, data=body, headers=headers) as response:
                    await response.read()
                    if response.status == 200:
                        answered += 1

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    LOAD_SECONDS[kind] = time.monotonic() - started
    return answered


# ---------------------------------------------------------------- the counters


@dataclass
class Counters:
    statements: float
    rows_written: float
    exec_ms: float
    wal_bytes: float
    wal_syncs: float
    db_cpu: float
    redis_commands: float
    redis_cpu: float
    s3_calls: float
    gateway_cpu: float
    seconds: float

    def minus(self, other: Counters) -> Counters:
        return Counters(*(a - b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def scaled(self, factor: float) -> Counters:
        return Counters(*(a * factor for a in astuple(self)))


def astuple(c: Counters) -> tuple[float, ...]:
    return tuple(float(v) for v in asdict(c).values())


ROWS_WRITTEN = r"^\s*(with\M.*?)?\m(insert|update|delete)\M"


class Meter:
    def __init__(self, dsn_root: str, redis_url: str, s3: S3Counter, redis_pid: int) -> None:
        self.dsn_root, self.redis_url, self.s3, self.redis_pid = dsn_root, redis_url, s3, redis_pid
        self.pg_pid = postmaster_pid(dsn_root)
        self.last_redis: dict[str, int] = {}
        self.last_statements: list[tuple[str, int, int]] = []  # (query, calls, rows), most called first

    def _redis_by_command(self) -> dict[str, int]:
        self.last_redis = redis_commands(self.redis_url)
        return self.last_redis

    async def reset(self) -> None:
        conn = await asyncpg.connect(self.dsn_root + "/postgres")
        try:
            await conn.execute("SELECT pg_stat_statements_reset()")
        finally:
            await conn.close()
        redis_cli(self.redis_url, "CONFIG", "RESETSTAT")

    async def read(self, replicas: list[Replica], started: float) -> Counters:
        conn = await asyncpg.connect(self.dsn_root + "/postgres")
        try:
            row = await conn.fetchrow(
                "SELECT coalesce(sum(calls), 0) AS calls,"
                " coalesce(sum(rows) FILTER (WHERE query ~* $2), 0) AS written,"
                " coalesce(sum(total_exec_time), 0) AS exec_ms"
                " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)",
                DATABASE,
                ROWS_WRITTEN,
            )
            self.last_statements = [
                (str(r["query"]), int(r["calls"]), int(r["rows"]))
                for r in await conn.fetch(
                    "SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS query, calls, rows"
                    " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)"
                    " ORDER BY calls DESC LIMIT 12",
                    DATABASE,
                )
            ]
            wal = await conn.fetchval("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")
            syncs = await conn.fetchval("SELECT wal_sync FROM pg_stat_wal")
        finally:
            await conn.close()
        return Counters(
            statements=float(row["calls"]),
            rows_written=float(row["written"]),
            exec_ms=float(row["exec_ms"]),
            wal_bytes=float(wal),
            wal_syncs=float(syncs),
            db_cpu=_procs.cpu_seconds(_procs.descendants(self.pg_pid)),
            redis_commands=float(sum(self._redis_by_command().values())),
            redis_cpu=_procs.cpu_seconds([self.redis_pid]),
            s3_calls=float(sum(self.s3.total().values())),
            gateway_cpu=sum(r.proc.cpu() for r in replicas),
            seconds=time.monotonic() - started,
        )

    async def window(self, replicas: list[Replica], work: Any) -> tuple[Counters, Any]:
        """The counters' change over `await work` plus the settling time after it. Statement and Redis
        counts start from zero (reset); the cumulative ones are differenced."""
        await self.reset()
        started = time.monotonic()
        before = await self.read(replicas, started)
        result = await work
        await asyncio.sleep(SETTLE_SECONDS)
        after = await self.read(replicas, started)
        delta = after.minus(before)
        # pg_stat_statements and commandstats were reset: their "before" is the reset's own few calls.
        delta.statements, delta.rows_written, delta.exec_ms = after.statements, after.rows_written, after.exec_ms
        delta.redis_commands = after.redis_commands
        return delta, result


# ---------------------------------------------------------------- the run


async def measure(replica_count: int, requests: int, base: Path) -> dict[str, Any]:
    with ExitStack() as stack:
        dsn_root = stack.enter_context(private_postgres())
        conn = await asyncpg.connect(dsn_root + "/postgres")
        await conn.execute(f"CREATE DATABASE {DATABASE}")
        await conn.execute("CREATE EXTENSION pg_stat_statements")  # the bench reads the view from here
        await conn.close()
        conn = await asyncpg.connect(f"{dsn_root}/{DATABASE}")
        await conn.execute("CREATE EXTENSION pg_stat_statements")
        await conn.close()
        redis_url, redis_process = stack.enter_context(private_redis())
        s3 = S3Counter()
        s3_env = s3.start()
        stack.callback(s3.stop)
        fake = _procs.start_fake_upstream(delay_ms=50, chunks=16)
        stack.callback(fake.stop)
        env = {
            **s3_env,
            "MODELPORT_DATABASE_URL": dsn_root.replace("postgresql://", "postgresql+asyncpg://") + "/" + DATABASE,
            "MODELPORT_REDIS_URL": redis_url,
            "MODELPORT_SECRET_KEY": secrets.token_urlsafe(32),
        }
        replicas, key = start_replicas(replica_count, base / f"r{replica_count}", env, fake.url)
        for replica in replicas:
            stack.callback(replica.proc.stop)
        meter = Meter(dsn_root, redis_url, s3, redis_process.pid)
        # Warm every path (first-use imports, connection pools), then the idle rate.
        for kind in KINDS:
            await load(kind, replicas, key, 4 * replica_count)
        idle, _ = await meter.window(replicas, asyncio.sleep(IDLE_SECONDS))
        per_second = idle.scaled(1 / idle.seconds)
        kinds: dict[str, Any] = {}
        for kind in KINDS:
            counters, answered = await meter.window(replicas, load(kind, replicas, key, requests))
            if answered != requests:
                raise RuntimeError(f"{kind}: {answered} of {requests} answered 200")
            net = counters.minus(per_second.scaled(counters.seconds))
            kinds[kind] = asdict(net.scaled(1 / requests))
            kinds[kind]["requests_per_second"] = requests / LOAD_SECONDS[kind]
            kinds[kind]["redis_by_command"] = {c: n / requests for c, n in sorted(meter.last_redis.items())}
            kinds[kind]["statements_by_query"] = [
                {"query": q, "calls": calls / requests, "rows": rows / requests}
                for q, calls, rows in meter.last_statements
            ]
        return {
            "replicas": replica_count,
            "requests_per_kind": requests,
            "idle_per_second_all_replicas": asdict(per_second),
            "per_request": kinds,
        }


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| replicas | kind | statements | rows written | WAL bytes | WAL syncs | DB exec ms | DB CPU ms | Redis cmds"
        " | Redis CPU ms | S3 calls | gateway CPU ms |"
    )
    lines = [head, "|" + "---|" * 12]
    for result in results:
        for kind, c in result["per_request"].items():
            lines.append(
                f"| {result['replicas']} | {kind} | {c['statements']:.2f} | {c['rows_written']:.2f} |"
                f" {c['wal_bytes']:.0f} | {c['wal_syncs']:.3f} | {c['exec_ms']:.3f} | {c['db_cpu'] * 1000:.2f} |"
                f" {c['redis_commands']:.2f} | {c['redis_cpu'] * 1000:.3f} | {c['s3_calls']:.2f} |"
                f" {c['gateway_cpu'] * 1000:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mp-capacity-"))
    results = []
    try:
        for count in (int(n) for n in args.replicas.split(",")):
            results.append(asyncio.run(measure(count, args.requests, base)))
            print(f"==> {count} replica(s) measured", file=sys.stderr)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(table(results))
    for result in results:
        for kind, c in result["per_request"].items():
            shown = ", ".join(f"{name} {n:.2f}" for name, n in c["redis_by_command"].items())
            print(f"Redis per request, {result['replicas']} replica(s), {kind}: {shown}")
    for kind, c in results[0]["per_request"].items():
        print(f"statements per request, {results[0]['replicas']} replica(s), {kind}:")
        for q in c["statements_by_query"]:
            print(f"    {q['calls']:6.3f} calls {q['rows']:6.3f} rows  {q['query']}")
    for result in results:
        idle = result["idle_per_second_all_replicas"]
        print(
            f"idle, {result['replicas']} replica(s), per second: {idle['statements']:.2f} statements,"
            f" {idle['redis_commands']:.2f} Redis commands, {idle['s3_calls']:.2f} S3 calls,"
            f" gateway CPU {idle['gateway_cpu'] * 1000:.1f} ms"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
