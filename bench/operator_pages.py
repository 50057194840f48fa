"""The operator console's pages on PostgreSQL with 1,300,000 request log rows over four teams: server time.

    .venv/bin/python bench/operator_pages.py [--rows 1000000] [--other-rows 300000] [--iterations 20]
                                             [--postgres-url postgresql+asyncpg://...] [--keep]

Fills a throw-away database the way bench/console_pages.py does (its `fill`: one team with `--rows` log
rows over 30 days, three others with `--other-rows` together, 2% errors, 5 models, 200 end users; no
cancelled rows), then requests each operator page through the media host's app in this process (httpx
ASGITransport, signed in with the admin token), `--iterations` times after a warm-up, and prints
p50/p99/max in ms and whether every p99 stays under 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from pathlib import Path

import httpx
from console_pages import DAY_S, DEFAULT_URL, asyncpg_dsn, fill, report, scratch_database, time_pages

from modelport.accounts import service as accounts
from modelport.apps.assemble import build_services
from modelport.apps.media import create_media_app
from modelport.settings import Settings

TOKEN = "bench-operator-token-0123456789-abcdef"


async def sign_in(client: httpx.AsyncClient) -> None:
    page = (await client.get("/console/admin/sign-in")).text
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    r = await client.post("/console/admin/sign-in", data={"admin_token": TOKEN, "csrf_token": found.group(1)})
    assert r.status_code == 303, r.text


async def older(client: httpx.AsyncClient, path: str, hops: int) -> str:
    for _ in range(hops):
        r = await client.get(path)
        found = re.search(r'href="(/console/admin/logs\?[^"]*before=[^"]+)"', r.text)
        assert found is not None, "no older page"
        path = found.group(1).replace("&amp;", "&")
    return path


async def run(args: argparse.Namespace) -> None:
    async with scratch_database(args.postgres_url, "mp_bench_operator_", args.keep) as (url, engine):
        team = await accounts.create_team(engine, "bench-console", tier=Settings().tiers[-1].name)
        created = [await accounts.create_key(engine, team.id, name=f"key {i}") for i in range(3)]
        end_s = int(time.time())
        args.ledger_rows = 1000
        await fill(
            asyncpg_dsn(url),
            team.id,
            [k.record.id for k in created],
            args,
            (end_s - 30 * DAY_S) * 1000,
            30 * DAY_S * 1000,
        )
        with tempfile.TemporaryDirectory() as data_dir:
            settings = Settings(data_dir=Path(data_dir), admin_token=TOKEN)
            app = create_media_app(build_services(settings, engine=engine))
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
                await sign_in(client)
                month = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 30 * DAY_S))
                by_team = f"/console/admin/logs?from={month}&team=bench-console"
                some_id = re.search(
                    r'href="/console/admin/logs/(req_[0-9a-f]+)"', (await client.get("/console/admin/logs")).text
                )
                assert some_id is not None
                pages = {
                    "teams": "/console/admin/",
                    "team (ledger)": f"/console/admin/teams/{team.id}",
                    "upstreams (latest failures)": "/console/admin/upstreams",
                    "logs, last 24 h": "/console/admin/logs",
                    "logs, 30 days": f"/console/admin/logs?from={month}",
                    "logs, 30 days, 20th page": await older(client, f"/console/admin/logs?from={month}", 20),
                    "logs, errors, 30 days": f"/console/admin/logs?from={month}&status=error",
                    "logs, cancelled (none), 30 d": f"/console/admin/logs?from={month}&status=cancelled",
                    "logs, model, 24 h": "/console/admin/logs?model=vllm/llama-3-8b",
                    "logs, team + model, 30 d": f"{by_team}&model=vllm/llama-3-8b",
                    "logs, team + errors, 30 d": f"{by_team}&status=error",
                    "logs, end user, 24 h": "/console/admin/logs?svc_user_id=user_000007",
                    "log detail": f"/console/admin/logs/{some_id.group(1)}",
                    "tasks": "/console/admin/tasks",
                    "queue": "/console/admin/queue",
                    "models": "/console/admin/models",
                }
                failed = await time_pages(client, pages, args.iterations)
    report(failed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--other-rows", type=int, default=300_000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--postgres-url", default=DEFAULT_URL)
    parser.add_argument("--keep", action="store_true")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
