"""Authenticator: concurrent requests for a key whose cache entry is missing or expired share one lookup."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import auth as auth_module
from modelport.accounts.auth import Authenticator
from modelport.accounts.limits import NO_LIMITS


class FakeLookup:
    """Stands in for `lookup_key`: counts calls and answers once `release` is set."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()

    async def __call__(self, engine: Any, key: str) -> tuple[Any, Any] | None:
        self.calls += 1
        await self.release.wait()
        if key != "sk-good":
            return None
        record = SimpleNamespace(
            id="key1",
            prefix="sk-go",
            active=True,
            last_used_at_ms=2**62,
            team_id="t1",
            limits=NO_LIMITS,
            role="member",
            name=None,
            owner_user_id=None,
        )
        return record, SimpleNamespace(
            id="t1", name="team", tier="free", log_retention=False, suspended=False, cache="off", cache_tool_calls=False
        )


@pytest.fixture
def lookup(monkeypatch: pytest.MonkeyPatch) -> FakeLookup:
    fake = FakeLookup()
    monkeypatch.setattr(auth_module, "lookup_key", fake)
    return fake


def authenticator(ttl: float) -> Authenticator:
    return Authenticator(cast(AsyncEngine, object()), ttl=ttl)


async def test_concurrent_misses_share_one_lookup(lookup: FakeLookup) -> None:
    auth = authenticator(ttl=5)
    waiters = [asyncio.ensure_future(auth.authenticate("sk-good")) for _ in range(20)]
    await asyncio.sleep(0)
    lookup.release.set()
    results = await asyncio.gather(*waiters)
    assert lookup.calls == 1
    assert {r.team_id for r in results if r is not None} == {"t1"} and None not in results
    assert await auth.authenticate("sk-good") is results[0]  # cached now
    assert lookup.calls == 1


async def test_unknown_keys_are_shared_and_negative(lookup: FakeLookup) -> None:
    auth = authenticator(ttl=5)
    lookup.release.set()
    assert list(await asyncio.gather(auth.authenticate("sk-bad"), auth.authenticate("sk-bad"))) == [None, None]
    assert lookup.calls == 1


async def test_one_waiter_cancelled_does_not_cancel_the_others(lookup: FakeLookup) -> None:
    auth = authenticator(ttl=5)
    first = asyncio.ensure_future(auth.authenticate("sk-good"))
    second = asyncio.ensure_future(auth.authenticate("sk-good"))
    await asyncio.sleep(0)
    first.cancel()
    lookup.release.set()
    result = await second
    assert result is not None and result.team_id == "t1"
    assert first.cancelled()
    assert lookup.calls == 1


async def test_eviction_starts_a_fresh_lookup(lookup: FakeLookup) -> None:
    auth = authenticator(ttl=5)
    before = asyncio.ensure_future(auth.authenticate("sk-good"))
    await asyncio.sleep(0)
    auth.evict_all()  # e.g. a key was revoked through the admin API meanwhile
    after = asyncio.ensure_future(auth.authenticate("sk-good"))
    await asyncio.sleep(0)
    lookup.release.set()
    await asyncio.gather(before, after)
    assert lookup.calls == 2


async def test_no_cache_means_no_sharing(lookup: FakeLookup) -> None:
    auth = authenticator(ttl=0)
    lookup.release.set()
    await asyncio.gather(auth.authenticate("sk-good"), auth.authenticate("sk-good"))
    assert lookup.calls == 2
