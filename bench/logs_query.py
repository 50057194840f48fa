"""`GET /v1/logs` on PostgreSQL with 1,000,000 rows for one team: latency of the route's own query.

    .venv/bin/python bench/logs_query.py [--rows 1000000] [--other-rows 300000] [--iterations 300]
                                         [--postgres-url postgresql+asyncpg://root@127.0.0.1:5432/test] [--keep]

Creates a throw-away database (dropped at the end unless --keep), migrates it, creates a team and fills
`request_logs` server-side with generate_series: `--rows` rows for that team spread at random over the
last 30 days (200 end users, 10% of rows without one, half with small retained payloads) and
`--other-rows` rows of three other teams in the same window. `request_log_counts` is filled from those
rows by the same GROUP BY that `store.insert_logs` maintains row by row. Then VACUUM ANALYZE (what
autovacuum does on a live table) and a CHECKPOINT (the fill's WAL flushed before, not during, the timing).

Measured, each `--iterations` times after a warm-up:
- `query`: `modelport.requestlog.query.find_logs`, the exact function the route calls (page and total,
  one REPEATABLE READ snapshot), for page 1, deep pages and the last page, with and without
  `svc_user_id`, over the full 30-day window;
- `http`: the same requests as `GET /v1/logs` through the text gateway app (httpx ASGITransport: key
  lookup from the auth cache, parameter checks, JSON encoding of the items), no network;
- `naive`: for comparison, the obvious implementation (count(*) over the window, then ORDER BY ... OFFSET),
  a few iterations.
Each query's `total` is checked against a plain count(*) once. Prints p50/p99/max in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import asyncpg
import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.apps.assemble import build_services
from modelport.apps.text import create_text_app
from modelport.requestlog.params import LogQuery
from modelport.requestlog.query import find_logs
from modelport.settings import Settings
from modelport.storage.db import create_engine
from modelport.storage.migrate import upgrade_to_head

DAY_S = 86_400
USERS = 200
DEFAULT_URL = os.environ.get("MODELPORT_TEST_POSTGRES_URL", "postgresql+asyncpg://root@127.0.0.1:5432/test")


@dataclass(frozen=True)
class Case:
    name: str
    query: LogQuery


def asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


FILL_SQL = """
INSERT INTO request_logs (id, team_id, created_at_ms, status, error, provider, model_name, endpoint,
                          prompt_tokens, completion_tokens, cached_tokens, cost_micros, svc_user_id,
                          session_id, input, result)
SELECT 'req_' || md5($1 || g::text),
       $2,
       $3::bigint + floor(random() * $4::bigint)::bigint,
       CASE WHEN g % 50 = 0 THEN 'error' ELSE 'success' END,
       CASE WHEN g % 50 = 0 THEN 'upstream timed out' END,
       'openai', 'gpt-4o-mini', 'chat.completions',
       100 + g % 900, g % 400, g % 64, 37 * (g % 1000),
       CASE WHEN g % 10 = 0 THEN NULL ELSE 'user_' || lpad((g % $5::int)::text, 6, '0') END,
       NULL,
       CASE WHEN g % 2 = 0 THEN '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"question '
            || g || '"}]}' END,
       CASE WHEN g % 2 = 0 THEN '{"choices":[{"message":{"role":"assistant","content":"answer '
            || g || '"}}]}' END
FROM generate_series(1, $6::int) AS g
"""

COUNTS_SQL = """
INSERT INTO request_log_counts (team_id, svc_user_id, hour, n)
SELECT team_id, '', created_at_ms / 3600000, count(*) FROM request_logs GROUP BY 1, 3
UNION ALL
SELECT team_id, svc_user_id, created_at_ms / 3600000, count(*) FROM request_logs
WHERE svc_user_id IS NOT NULL GROUP BY 1, 2, 3
"""


async def fill(dsn: str, team_id: str, rows: int, other_rows: int, start_ms: int, span_ms: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT setseed(0.42)")
        begun = time.perf_counter()
        await conn.execute(FILL_SQL, "a", team_id, start_ms, span_ms, USERS, rows)
        for i in range(3):
            await conn.execute(FILL_SQL, f"o{i}", f"team_other_{i}", start_ms, span_ms, USERS, other_rows // 3)
        await conn.execute(COUNTS_SQL)
        print(f"filled {rows + other_rows:,} rows in {time.perf_counter() - begun:.1f}s", flush=True)
        await conn.execute("VACUUM ANALYZE request_logs")
        await conn.execute("VACUUM ANALYZE request_log_counts")
        # The fill wrote ~1 GB of WAL: flush it now, as a live database's checkpoints did long ago, so the
        # measurement never shares the disk with that flush.
        await conn.execute("CHECKPOINT")
    finally:
        await conn.close()


async def naive_total(engine: AsyncEngine, team_id: str, q: LogQuery) -> int:
    user = "AND svc_user_id = :u" if q.svc_user_id else ""
    async with engine.connect() as conn:
        found = await conn.scalar(
            text(
                f"SELECT count(*) FROM request_logs WHERE team_id = :t {user} "
                "AND created_at_ms >= :lo AND created_at_ms < :hi"
            ),
            {"t": team_id, "u": q.svc_user_id, "lo": q.lo_ms, "hi": q.hi_ms},
        )
    return int(found or 0)


async def naive_page(engine: AsyncEngine, team_id: str, q: LogQuery) -> None:
    """The obvious implementation, for comparison: exact count(*) plus ORDER BY ... OFFSET."""
    user = "AND svc_user_id = :u" if q.svc_user_id else ""
    params = {"t": team_id, "u": q.svc_user_id, "lo": q.lo_ms, "hi": q.hi_ms, "n": q.page_size, "o": q.offset}
    async with engine.connect() as conn:
        await conn.execute(
            text(
                f"SELECT count(*) FROM request_logs WHERE team_id = :t {user} "
                "AND created_at_ms >= :lo AND created_at_ms < :hi"
            ),
            params,
        )
        await conn.execute(
            text(
                f"SELECT * FROM request_logs WHERE team_id = :t {user} AND created_at_ms >= :lo "
                "AND created_at_ms < :hi ORDER BY created_at_ms DESC, id DESC "
                "LIMIT :n OFFSET :o"
            ),
            params,
        )


async def timed(fn: Callable[[], Awaitable[object]], iterations: int, warmup: int = 10) -> list[float]:
    for _ in range(warmup):
        await fn()
    samples = []
    for _ in range(iterations):
        begun = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - begun) * 1000)
    return samples


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def summary(samples: list[float]) -> str:
    return f"p50 {statistics.median(samples):7.2f}  p99 {p99(samples):7.2f}  max {max(samples):7.2f}"


def cases(end_s: int, total_rows: int) -> list[Case]:
    start_s = end_s - 30 * DAY_S
    user = "user_000007"
    per_user = total_rows * 9 // 10 // USERS
    last_page = max(1, -(-total_rows // 100))
    return [
        Case("page 1, size 10", LogQuery(start_s, end_s)),
        Case("page 1, size 100", LogQuery(start_s, end_s, page_size=100)),
        Case(f"page {last_page // 2}, size 100", LogQuery(start_s, end_s, page=last_page // 2, page_size=100)),
        Case("last page, size 100", LogQuery(start_s, end_s, page=last_page, page_size=100)),
        Case("user, page 1, size 100", LogQuery(start_s, end_s, svc_user_id=user, page_size=100)),
        Case(
            "user, deep page, size 100",
            LogQuery(start_s, end_s, svc_user_id=user, page=max(1, per_user // 200), page_size=100),
        ),
        Case("1-hour window, page 1", LogQuery(end_s - 3600, end_s, page_size=100)),
    ]


async def run(args: argparse.Namespace) -> None:
    admin_dsn = asyncpg_dsn(args.postgres_url)
    name = "mp_bench_logs_" + secrets.token_hex(4)
    conn = await asyncpg.connect(admin_dsn)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = make_url(args.postgres_url).set(database=name).render_as_string(hide_password=False)
    engine = create_engine(url)
    try:
        await upgrade_to_head(engine)
        # The top tier: the bench's thousands of queries a minute stay under its query RPM.
        team = await accounts.create_team(engine, "bench-logs", tier=Settings().tiers[-1].name)
        key = (await accounts.create_key(engine, team.id)).key
        end_s = int(time.time())
        await fill(
            asyncpg_dsn(url), team.id, args.rows, args.other_rows, (end_s - 30 * DAY_S) * 1000, 30 * DAY_S * 1000
        )
        all_cases = cases(end_s, args.rows)

        for case in all_cases:
            page = await find_logs(engine, team.id, case.query)
            naive = await naive_total(engine, team.id, case.query)
            assert page.total == naive, f"{case.name}: total {page.total} != count(*) {naive}"
            print(f"  {case.name:28s} total {page.total:>9,}  rows {len(page.rows)}", flush=True)

        # As a serving process does after start-up (server.serve_both): long-lived objects leave the
        # collector's generations. Without it this process's own full collections (its heap holds every
        # module imported) showed up as ~100 ms outliers, once every second or two, in every series.
        gc.collect()
        gc.freeze()
        print(f"\nquery: find_logs (the route's query), {args.iterations} iterations, ms")
        for case in all_cases:
            samples = await timed(partial(find_logs, engine, team.id, case.query), args.iterations)
            print(f"  {case.name:28s} {summary(samples)}", flush=True)

        print(f"\nhttp: GET /v1/logs through the text gateway app (ASGI, no network), {args.iterations} iterations, ms")
        with tempfile.TemporaryDirectory() as data_dir:
            app = create_text_app(build_services(Settings(data_dir=Path(data_dir)), engine=engine))
            gc.collect()
            gc.freeze()
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                for case in all_cases:
                    q = case.query
                    params: dict[str, str | int] = {
                        "start_time": q.start_time,
                        "end_time": q.end_time,
                        "page": q.page,
                        "page_size": q.page_size,
                        **({"svc_user_id": q.svc_user_id} if q.svc_user_id else {}),
                    }

                    async def call(p: dict[str, str | int] = params) -> None:
                        r = await client.get("/v1/logs", params=p, headers={"Authorization": f"Bearer {key}"})
                        assert r.status_code == 200, r.text

                    print(f"  {case.name:28s} {summary(await timed(call, args.iterations))}", flush=True)

        print("\nnaive: count(*) + ORDER BY ... OFFSET, 20 iterations, ms")
        for case in all_cases:
            samples = await timed(partial(naive_page, engine, team.id, case.query), 20, warmup=2)
            print(f"  {case.name:28s} {summary(samples)}", flush=True)
    finally:
        await engine.dispose()
        if not args.keep:
            conn = await asyncpg.connect(admin_dsn)
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await conn.close()
        else:
            print(f"kept database {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--other-rows", type=int, default=300_000)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--postgres-url", default=DEFAULT_URL)
    parser.add_argument("--keep", action="store_true", help="keep the database for inspection")
    args = parser.parse_args()
    if args.rows < 1000:
        sys.exit("--rows: at least 1000")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
