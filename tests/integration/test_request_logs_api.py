"""`GET /v1/logs` through the text gateway app, on SQLite and PostgreSQL.

Rows are written with the real writer; expectations come from a plain sort of the same rows.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.apps.assemble import build_services
from modelport.apps.text import create_text_app
from modelport.requestlog.payloads import PayloadPolicy
from modelport.requestlog.record import LogRecord
from modelport.requestlog.writer import RequestLogWriter
from modelport.settings import Settings

HOUR = 3600
# A window that starts and ends inside an hour, so both partial hours and whole hours are exercised.
START = 1_700_000_000 - 1_700_000_000 % HOUR + 1234
END = START + 5 * HOUR + 777
USERS = ["user_alpha1", "user-beta-22", None]
ITEM_KEYS = {
    "task_id",
    "key_id",
    "status",
    "error",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "price_tier",
    "previous_response_id",
    "conversation_id",
    "served_model",
    "cost",
    "cache",
    "cache_saved",
    "created_at",
    "input",
    "result",
}
KEPT = PayloadPolicy(enabled=True)


@dataclass
class World:
    client: httpx.AsyncClient
    key_a: str
    key_b: str
    team_a: list[LogRecord]  # every row of team A, inside and outside the window
    team_b: list[LogRecord]


def expected(rows: list[LogRecord], *, user: str | None = None, lo: int = START, hi: int = END) -> list[str]:
    inside = [r for r in rows if lo <= r.created_at_ms // 1000 <= hi and (user is None or r.svc_user_id == user)]
    inside.sort(key=lambda r: (r.created_at_ms, r.id), reverse=True)
    return [r.id for r in inside]


def seed(team_id: str, count: int, rng: random.Random) -> list[LogRecord]:
    rows: list[LogRecord] = []
    for i in range(count):
        at_ms = START * 1000 + rng.randrange(0, (END - START + 1) * 1000)
        if i % 10 == 0:
            at_ms = rows[-1].created_at_ms if rows else at_ms  # ties on the millisecond: ordered by id
        rows.append(
            LogRecord(
                id=f"req_{team_id[-6:]}_{i:05d}_{rng.randrange(10**6):06d}",
                team_id=team_id,
                created_at_ms=at_ms,
                status="success" if i % 7 else "error",
                error=None if i % 7 else "upstream timed out",
                provider="openai",
                model_name="gpt-4o-mini",
                endpoint="chat.completions",
                prompt_tokens=100 + i,
                completion_tokens=i,
                cached_tokens=i % 3,
                cost_micros=1234 * i,
                svc_user_id=USERS[i % 3],
                input=KEPT.payload({"messages": [{"role": "user", "content": f"q{i}"}]}) if i % 2 else None,
                result=KEPT.payload({"choices": [{"message": {"content": f"a{i}"}}]}) if i % 2 else None,
            )
        )
    # Just outside the window on both sides, and exactly on its edges.
    edges = [
        (START * 1000 - 1, "before"),
        (START * 1000, "first"),
        (END * 1000 + 999, "last"),
        (END * 1000 + 1000, "after"),
    ]
    for at_ms, name in edges:
        rows.append(
            LogRecord(
                id=f"req_{team_id[-6:]}_{name}",
                team_id=team_id,
                created_at_ms=at_ms,
                status="success",
                provider="anthropic",
                model_name="claude",
                endpoint="messages",
            )
        )
    return rows


@pytest.fixture
async def world(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[World]:
    team_a = await accounts.create_team(engine, "logs-a", tier="free")
    team_b = await accounts.create_team(engine, "logs-b", tier="free")
    key_a = (await accounts.create_key(engine, team_a.id)).key
    key_b = (await accounts.create_key(engine, team_b.id)).key
    rng = random.Random(4)
    rows_a, rows_b = seed(team_a.id, 230, rng), seed(team_b.id, 40, rng)
    writer = RequestLogWriter(engine, max_batch=64)
    for rec in rng.sample(rows_a + rows_b, len(rows_a) + len(rows_b)):
        writer.record(rec)
    await writer.aclose()

    services = build_services(Settings(data_dir=tmp_path, auth_cache_seconds=0), engine=engine)
    transport = httpx.ASGITransport(app=create_text_app(services))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://text.test") as client:
            yield World(client, key_a, key_b, rows_a, rows_b)
    finally:
        # No lifespan runs under ASGITransport: close the services here, or a key's `last_used_at` write
        # still running holds a pooled connection past the engine's disposal (an unclosed aiosqlite
        # connection, reported by the garbage collector during a later test).
        await services.aclose()


async def get_logs(world: World, key: str | None = None, **params: Any) -> httpx.Response:
    query = {"start_time": START, "end_time": END, **params}
    headers = {"Authorization": f"Bearer {key or world.key_a}"}
    return await world.client.get("/v1/logs", params={k: v for k, v in query.items() if v is not None}, headers=headers)


async def all_pages(world: World, page_size: int, **params: Any) -> tuple[list[str], int]:
    ids: list[str] = []
    page = 1
    totals = set()
    while True:
        r = await get_logs(world, page=page, page_size=page_size, **params)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["page"] == page and body["page_size"] == page_size
        totals.add(body["total"])
        if not body["requests"]:
            break
        assert len(body["requests"]) <= page_size
        ids += [item["task_id"] for item in body["requests"]]
        page += 1
    assert len(totals) == 1
    return ids, totals.pop()


async def test_pages_cover_the_window_newest_first_without_gaps(world: World) -> None:
    want = expected(world.team_a)
    assert len(want) == 232  # 230 seeded + the two rows on the window's edges
    for size in (7, 100):
        ids, total = await all_pages(world, size)
        assert total == len(want)
        assert ids == want


async def test_default_page_and_a_page_past_the_end(world: World) -> None:
    r = await get_logs(world)
    body = r.json()
    assert (body["page"], body["page_size"], body["total"]) == (1, 10, 232)
    # Counted against the query rate limit, whose headers come on success too.
    remaining = int(r.headers["x-ratelimit-remaining"])
    assert int(r.headers["x-ratelimit-limit"]) > remaining
    assert [i["task_id"] for i in body["requests"]] == expected(world.team_a)[:10]
    r = await get_logs(world, page=24, page_size=10)
    assert int(r.headers["x-ratelimit-remaining"]) == remaining - 1
    assert [i["task_id"] for i in r.json()["requests"]] == expected(world.team_a)[230:]
    r = await get_logs(world, page=1000, page_size=100)
    assert r.json() == {"requests": [], "total": 232, "page": 1000, "page_size": 100}


@pytest.mark.parametrize("user", ["user_alpha1", "user-beta-22", "user_nobody"])
async def test_svc_user_id_filter(world: World, user: str) -> None:
    ids, total = await all_pages(world, 9, svc_user_id=user)
    assert ids == expected(world.team_a, user=user)
    assert total == len(ids)
    assert (total > 0) == (user != "user_nobody")


async def test_teams_see_only_their_own_rows(world: World) -> None:
    r = await get_logs(world, key=world.key_b, page_size=100)
    body = r.json()
    assert body["total"] == len(expected(world.team_b)) == 42
    assert [i["task_id"] for i in body["requests"]] == expected(world.team_b)
    own = {rec.id for rec in world.team_a}
    assert not own & {i["task_id"] for i in body["requests"]}


async def test_narrow_windows_inside_one_hour_and_across_one_boundary(world: World) -> None:
    for lo, hi in [(START + 10, START + 900), (START + HOUR - 1500, START + HOUR + 200)]:
        r = await get_logs(world, start_time=lo, end_time=hi, page_size=100)
        body = r.json()
        want = expected(world.team_a, lo=lo, hi=hi)
        assert body["total"] == len(want)
        assert [i["task_id"] for i in body["requests"]] == want[:100]


async def test_item_shape(world: World) -> None:
    r = await get_logs(world, page_size=100, page=1)
    assert r.headers["content-type"].startswith("application/json")
    items = r.json()["requests"]
    by_id = {rec.id: rec for rec in world.team_a}
    kept = dropped = 0
    for item in items:
        assert set(item) == ITEM_KEYS  # in particular, no svc_user_id
        rec = by_id[item["task_id"]]
        assert item["model"] == {"provider": rec.provider, "model_name": rec.model_name}
        assert item["created_at"] == rec.created_at_ms // 1000
        assert (item["status"], item["error"]) == (rec.status, rec.error)
        assert (item["prompt_tokens"], item["completion_tokens"], item["cached_tokens"]) == (
            rec.prompt_tokens,
            rec.completion_tokens,
            rec.cached_tokens,
        )
        if rec.input is None:
            assert item["input"] is None and item["result"] is None
            dropped += 1
        else:
            assert item["input"] == json.loads(rec.input) and item["result"] == json.loads(rec.result or "")
            kept += 1
    assert kept and dropped
    # Cost: USD as an exact JSON number with 6 decimal places.
    some = next(rec for rec in world.team_a if rec.id == items[0]["task_id"])
    assert f'"cost":{some.cost_micros // 10**6}.{some.cost_micros % 10**6:06d}' in r.text


INVALID = [
    ({"start_time": None}, "start_time"),
    ({"end_time": None}, "end_time"),
    ({"start_time": "yesterday"}, "start_time"),
    ({"start_time": "-1"}, "start_time"),
    ({"end_time": "1.5"}, "end_time"),
    ({"end_time": START}, "end_time"),
    ({"end_time": START - 1}, "end_time"),
    ({"end_time": START + 30 * 86400 + 1}, "end_time"),
    ({"svc_user_id": "short"}, "svc_user_id"),
    ({"svc_user_id": "bad value!"}, "svc_user_id"),
    ({"svc_user_id": "x" * 129}, "svc_user_id"),
    ({"page": "0"}, "page"),
    ({"page": "first"}, "page"),
    ({"page_size": "0"}, "page_size"),
    ({"page_size": "101"}, "page_size"),
    ({"page_size": "1e2"}, "page_size"),
]


@pytest.mark.parametrize(("params", "param"), INVALID)
async def test_each_bad_parameter_is_a_400_naming_it(world: World, params: dict[str, Any], param: str) -> None:
    query: dict[str, Any] = {"start_time": START, "end_time": END, **params}
    r = await world.client.get(
        "/v1/logs", params={k: v for k, v in query.items() if v is not None}, headers={"x-api-key": world.key_a}
    )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param and param in error["message"]


async def test_thirty_days_exactly_is_accepted(world: World) -> None:
    r = await get_logs(world, start_time=END - 30 * 86400, end_time=END)
    assert r.status_code == 200 and r.json()["total"] == len(expected(world.team_a, lo=END - 30 * 86400))


async def test_needs_a_valid_key(world: World) -> None:
    r = await world.client.get("/v1/logs", params={"start_time": START, "end_time": END})
    assert r.status_code == 401 and r.json()["error"]["type"] == "invalid_request_error"
    r = await world.client.get("/v1/logs", params={"start_time": "bad"}, headers={"x-api-key": "mp-wrong"})
    assert r.status_code == 401
