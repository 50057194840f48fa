"""Retention pruning while serving: how long it takes, what it gives back, and what it costs serving.

    .venv/bin/python bench/retention.py --backend postgres [--rows 10000000]
    .venv/bin/python bench/retention.py --backend sqlite [--rows 2000000]
        [--days 120] [--window-days 90] [--payload-days 30] [--seconds 10] [--concurrency 16]
        [--load chat|logs] [--busy-share 0.25] [--keep]

Fills `request_logs` server-side (PostgreSQL generate_series, SQLite a recursive CTE; on PostgreSQL into the
day partitions of migration 0020, created first as the pruner would have) with `--rows` rows of
four teams spread evenly over the last `--days` days (half with small retained payloads, 200 end users) and their
hourly counts, then starts `modelport serve` on that database (its own pruner idle) with the benchmark's
fake upstream and measures Chat Completions through it (`--load logs`: GET /v1/logs of a filled team's last
day instead; closed loop, `--concurrency` clients):
- `baseline`: `--seconds` of load, nothing else, before pruning and again after it (pooled);
- `pruning`: the same load while `modelport admin prune` (the real pruner, in its own process, windows
  `--window-days` and `--payload-days`, `--busy-share`) runs one pruning run, for as long as the run takes
  (at least `--seconds`).
Prints the rows pruned, the time the run took, the database size before and after (PostgreSQL
`pg_database_size`; SQLite the file and its WAL, after the incremental vacuum), and p50/p99 of both phases
with the ratio of the p99s (target <= 1.2).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import _load
import _procs
import asyncpg
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.requestlog.tables import request_logs
from modelport.retention import partitions
from modelport.retention.stats import database_bytes
from modelport.settings import RetentionSettings
from modelport.storage.db import create_engine
from modelport.storage.migrate import upgrade_to_head

DAY_MS = 86_400_000
TEAMS = 4
DEFAULT_PG = os.environ.get("MODELPORT_TEST_POSTGRES_URL", "postgresql+asyncpg://root@127.0.0.1:5432/test")

# $1 seed text, $2 team, $3 start ms, $4 span ms, $5 rows (PostgreSQL); the SQLite form below is the same.
# Rows in time order (evenly spread): each day's partition and its indexes are filled while they are small
# and cached, as a live service fills them; a random order would make the 10M-row fill several times slower.
PG_FILL = """
INSERT INTO request_logs (id, team_id, created_at_ms, status, error, provider, model_name, endpoint,
    prompt_tokens, completion_tokens, cached_tokens, cost_micros, svc_user_id, session_id, input, result)
SELECT 'req_' || md5($1 || g::text), $2, $3::bigint + (g::bigint * $4::bigint) / $5::int,
       CASE WHEN g % 50 = 0 THEN 'error' ELSE 'success' END, NULL, 'openai', 'gpt-4o-mini', 'chat.completions',
       100 + g % 900, g % 400, g % 64, 37 * (g % 1000),
       CASE WHEN g % 10 = 0 THEN NULL ELSE 'user_' || lpad((g % 200)::text, 6, '0') END, NULL,
       CASE WHEN g % 2 = 0 THEN '{"messages":[{"role":"user","content":"question ' || g || '"}]}' END,
       CASE WHEN g % 2 = 0 THEN '{"choices":[{"message":{"content":"answer ' || g || '"}}]}' END
FROM generate_series(1, $5::int) AS g
"""
SQLITE_FILL = """
INSERT INTO request_logs (id, team_id, created_at_ms, status, error, provider, model_name, endpoint,
    prompt_tokens, completion_tokens, cached_tokens, cost_micros, svc_user_id, session_id, input, result)
WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < :n)
SELECT 'req_' || :seed || '_' || g, :team, :start + (g * :span) / :n,
       CASE WHEN g % 50 = 0 THEN 'error' ELSE 'success' END, NULL, 'openai', 'gpt-4o-mini', 'chat.completions',
       100 + g % 900, g % 400, g % 64, 37 * (g % 1000),
       CASE WHEN g % 10 = 0 THEN NULL ELSE 'user_' || (g % 200) END, NULL,
       CASE WHEN g % 2 = 0 THEN '{"messages":[{"role":"user","content":"question ' || g || '"}]}' END,
       CASE WHEN g % 2 = 0 THEN '{"choices":[{"message":{"content":"answer ' || g || '"}}]}' END
FROM s
"""
COUNTS = """
INSERT INTO request_log_counts (team_id, svc_user_id, hour, n)
SELECT team_id, '', created_at_ms / 3600000, count(*) FROM request_logs GROUP BY 1, 3
UNION ALL
SELECT team_id, svc_user_id, created_at_ms / 3600000, count(*) FROM request_logs
WHERE svc_user_id IS NOT NULL GROUP BY 1, 2, 3
"""


def pg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def fill(url: str, team_ids: list[str], rows: int, days: int) -> None:
    start, span = int(time.time() * 1000) - days * DAY_MS, days * DAY_MS
    per_team = rows // len(team_ids)
    begun = time.perf_counter()
    if url.startswith("postgresql"):
        conn = await asyncpg.connect(pg_dsn(url))
        try:
            for i, team in enumerate(team_ids):
                await conn.execute(PG_FILL, f"t{i}", team, start, span, per_team)
            await conn.execute(COUNTS)
            await conn.execute("VACUUM ANALYZE request_logs")
            await conn.execute("CHECKPOINT")
        finally:
            await conn.close()
    else:
        db = sqlite3.connect(make_url(url).database or "")
        try:
            for i, team in enumerate(team_ids):
                db.execute(SQLITE_FILL, {"n": per_team, "seed": f"t{i}", "team": team, "start": start, "span": span})
            db.execute(COUNTS)
            db.commit()
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
    print(
        f"filled {per_team * len(team_ids):,} rows over {days} days in {time.perf_counter() - begun:.0f} s", flush=True
    )


async def count_rows(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(request_logs)) or 0)


async def count_partitions(engine: AsyncEngine) -> int | None:
    if not await partitions.is_partitioned(engine):
        return None
    async with engine.connect() as conn:
        return len(await partitions.day_partitions(conn))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000 if ordered else float("nan")


async def load(target: _load.Target, concurrency: int, seconds: float) -> _load.Sample:
    async with _load.new_session(concurrency) as session:
        return await _load.run(session, target, concurrency=concurrency, seconds=seconds, warmup=1.0)


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="mp-bench-retention-"))
    (work / "data").mkdir(mode=0o700)
    pg_name = None
    if args.backend == "postgres":
        pg_name = "mp_bench_retention_" + secrets.token_hex(4)
        admin = await asyncpg.connect(pg_dsn(args.postgres_url))
        await admin.execute(f'CREATE DATABASE "{pg_name}"')
        await admin.close()
        url = make_url(args.postgres_url).set(database=pg_name).render_as_string(hide_password=False)
    else:
        url = f"sqlite+aiosqlite:///{work / 'data' / 'modelport.db'}"
    engine = create_engine(url)
    upstream = gateway = None
    try:
        await upgrade_to_head(engine)
        team_ids = [(await accounts.create_team(engine, f"bench{i}", tier="bench")).id for i in range(TEAMS)]
        if await partitions.is_partitioned(engine):
            # A service that ran for `--days` days has had its day partitions created ahead by the pruner.
            today = int(time.time() * 1000) // DAY_MS
            await partitions.ensure_days(engine, today - args.days - 1, today + partitions.AHEAD_DAYS)
        await fill(url, team_ids, args.rows, args.days)
        before = await database_bytes(engine)
        upstream = _procs.start_fake_upstream(delay_ms=20, chunks=1)
        idle = {"MODELPORT_RETENTION__REQUEST_LOGS_DAYS": "0", "MODELPORT_RETENTION__LOG_PAYLOADS_DAYS": "0"}
        gateway = _procs.start_gateway(work / "data", upstream.url, workers=1, database_url=url, extra_env=idle)
        if args.load == "logs":
            # GET /v1/logs of a filled team: its last day, the first page (reads the partitions pruning locks).
            key = (await accounts.create_key(engine, team_ids[0])).key
            now = int(time.time())
            target = _load.Target(
                f"{gateway.url}/v1/logs?start_time={now - 86_400}&end_time={now}&page_size=20",
                {"authorization": f"Bearer {key}"},
                b"",
                False,
                lambda payload: b'"requests"' in payload,
                method="GET",
            )
        else:
            body = {"model": "bench/fast", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}
            target = _load.Target(
                gateway.url + "/v1/chat/completions",
                {"content-type": "application/json", "authorization": f"Bearer {gateway.extra['key']}"},
                json.dumps(body).encode(),
                False,
                lambda payload: b'"choices"' in payload,
            )
        baseline = await load(target, args.concurrency, args.seconds)
        settings = RetentionSettings(
            request_logs_days=args.window_days, log_payloads_days=args.payload_days, batch_rows=args.batch_rows
        )
        rows_before = await count_rows(engine)
        parts_before = await count_partitions(engine)
        prune_env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
        prune_env.update(
            {
                "MODELPORT_DATA_DIR": str(work / "pruner"),
                "MODELPORT_DATABASE_URL": url,
                "MODELPORT_RETENTION__REQUEST_LOGS_DAYS": str(settings.request_logs_days),
                "MODELPORT_RETENTION__LOG_PAYLOADS_DAYS": str(settings.log_payloads_days),
                "MODELPORT_RETENTION__BATCH_ROWS": str(settings.batch_rows),
                "MODELPORT_RETENTION__BUSY_SHARE": str(args.busy_share),
            }
        )
        (work / "pruner").mkdir(mode=0o700)
        pruned: dict[str, float] = {}
        phases: dict[str, float] = {}

        async def prune() -> None:
            # In its own process (`modelport admin prune`), as one serving or worker process of a deployment
            # runs it: the bench's load generator keeps its event loop to itself.
            begun = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "modelport",
                "admin",
                "prune",
                "--json",
                env=prune_env,
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await proc.communicate()
            assert proc.returncode == 0, f"modelport admin prune exited {proc.returncode}"
            report = json.loads(out)
            pruned.update(report["removed"])
            pruned["seconds"] = time.perf_counter() - begun
            phases.update(report["phases"])

        pruning_task = asyncio.create_task(prune())
        during = await load(target, args.concurrency, args.seconds)
        while not pruning_task.done():  # keep measuring for as long as pruning runs
            more = await load(target, args.concurrency, args.seconds)
            during.latencies.extend(more.latencies)
            during.errors += more.errors
        await pruning_task
        # The baseline again after pruning, pooled with the first: drift of the machine over a long run
        # weighs on both sides.
        again = await load(target, args.concurrency, args.seconds)
        baseline.latencies.extend(again.latencies)
        baseline.errors += again.errors
        after = await database_bytes(engine)
        rows_after = await count_rows(engine)
        parts_after = await count_partitions(engine)
        p99_base, p99_during = pct(baseline.latencies, 0.99), pct(during.latencies, 0.99)
        print(f"backend {args.backend}, {args.rows:,} rows over {args.days} days, window {args.window_days} days")
        print(f"pruned: {json.dumps({k: v for k, v in pruned.items() if k != 'seconds'})}")
        print(f"pruning took {pruned['seconds']:.1f} s: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
        if parts_before is not None and parts_after is not None:
            print(f"day partitions: {parts_before} before, {parts_after} after (created ahead included)")
        print(
            f"database size: {(before or 0) / 2**20:.0f} MiB before ({rows_before:,} log rows), "
            f"{(after or 0) / 2**20:.0f} MiB after ({rows_after:,} log rows, those served during the bench included)"
        )
        print(
            f"serving {args.load} c={args.concurrency}: baseline p50 {pct(baseline.latencies, 0.5):.1f} ms "
            f"p99 {p99_base:.1f} ms "
            f"({baseline.count} requests, {baseline.errors} errors); during pruning p50 "
            f"{pct(during.latencies, 0.5):.1f} ms p99 {p99_during:.1f} ms ({during.count} requests, "
            f"{during.errors} errors); p99 ratio {p99_during / p99_base:.2f} (target <= 1.2)"
        )
    finally:
        for proc in (gateway, upstream):
            if proc is not None:
                proc.stop()
        await engine.dispose()
        if pg_name is not None and not args.keep:
            admin = await asyncpg.connect(pg_dsn(args.postgres_url))
            await admin.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
            await admin.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--rows", type=int, default=None, help="default 10,000,000 (PostgreSQL), 2,000,000 (SQLite)")
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--window-days", type=float, default=90)
    parser.add_argument("--payload-days", type=float, default=30)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--batch-rows", type=int, default=RetentionSettings().batch_rows)
    parser.add_argument("--busy-share", type=float, default=RetentionSettings().busy_share)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--load", choices=("chat", "logs"), default="chat", help="Chat Completions, or GET /v1/logs of a filled team"
    )
    parser.add_argument("--postgres-url", default=DEFAULT_PG)
    parser.add_argument("--keep", action="store_true", help="keep the database and data directory")
    args = parser.parse_args()
    if args.rows is None:
        args.rows = 10_000_000 if args.backend == "postgres" else 2_000_000
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
