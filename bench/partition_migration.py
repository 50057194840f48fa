"""How long migration 0020 (PostgreSQL: `request_logs` into day partitions) takes on a populated table.

    .venv/bin/python bench/partition_migration.py [--rows 1000000] [--days 90] [--keep]

Creates a scratch database, migrates it to 0019, fills `request_logs` server-side with `--rows` rows of four
teams over the last `--days` days (as `retention.py` does: half with small payloads), runs `VACUUM ANALYZE`
and a checkpoint, then times `modelport migrate` to head (0020: the copy into the partitions and the index
builds, all under the ACCESS EXCLUSIVE lock) and prints the time per million rows.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import time

import asyncpg
from alembic import command
from retention import DEFAULT_PG, PG_FILL, TEAMS, pg_dsn
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from modelport.storage.db import create_engine
from modelport.storage.migrate import alembic_config, upgrade_to_head

DAY_MS = 86_400_000


def _upgrade_to(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def run(args: argparse.Namespace) -> None:
    name = "mp_bench_partition_" + secrets.token_hex(4)
    admin = await asyncpg.connect(pg_dsn(args.postgres_url))
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = make_url(args.postgres_url).set(database=name).render_as_string(hide_password=False)
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_upgrade_to, "0019")
        start, span = int(time.time() * 1000) - args.days * DAY_MS, args.days * DAY_MS
        conn_pg = await asyncpg.connect(pg_dsn(url))
        try:
            begun = time.perf_counter()
            for i in range(TEAMS):
                await conn_pg.execute(PG_FILL, f"t{i}", f"team_{i}", start, span, args.rows // TEAMS)
            print(f"filled {args.rows:,} rows in {time.perf_counter() - begun:.0f} s", flush=True)
            await conn_pg.execute("VACUUM ANALYZE request_logs")
            await conn_pg.execute("CHECKPOINT")
            size = await conn_pg.fetchval("SELECT pg_total_relation_size('request_logs')")
        finally:
            await conn_pg.close()
        begun = time.perf_counter()
        await upgrade_to_head(engine)
        took = time.perf_counter() - begun
        async with engine.connect() as conn:
            rows = await conn.scalar(text("SELECT count(*) FROM request_logs"))
            parts = await conn.scalar(
                text("SELECT count(*) FROM pg_inherits WHERE inhparent = 'request_logs'::regclass")
            )
        print(
            f"migration 0020: {rows:,} rows ({size / 2**20:.0f} MiB with indexes) into {parts} partitions "
            f"in {took:.1f} s: {took / (args.rows / 1e6):.1f} s per million rows"
        )
    finally:
        await engine.dispose()
        if not args.keep:
            admin = await asyncpg.connect(pg_dsn(args.postgres_url))
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--postgres-url", default=DEFAULT_PG)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
