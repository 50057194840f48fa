"""The cache service over an in-memory store: a lookup waits for this process's store of the same answer,
errors and tool calls are not kept, a broken store is a miss, and hits, misses, evictions and bytes are
counted per team."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from modelport import metrics
from modelport.core.messages import CanonicalRequest, Message
from modelport.core.parts import TextPart
from modelport.protocols import CODECS
from modelport.response_cache.service import ResponseCache, Result
from modelport.response_cache.store import Stored
from modelport.settings import CacheSettings

CHAT = CODECS["openai_chat"]
TEXT_BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "p/m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
TOOL_BODY = {
    **TEXT_BODY,
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            "finish_reason": "tool_calls",
        }
    ],
}


class MemoryStore:
    def __init__(self, *, slow: float = 0.0, broken: bool = False, evicts: list[str] | None = None) -> None:
        self.entries: dict[tuple[str, str], bytes] = {}
        self.slow, self.broken, self.evicts = slow, broken, evicts or []

    async def get(self, team_id: str, digest: str, now_ms: int) -> bytes | None:
        if self.broken:
            raise ConnectionError("down")
        return self.entries.get((team_id, digest))

    async def put(self, team_id: str, digest: str, value: bytes, expires_at_ms: int, now_ms: int) -> Stored:
        await asyncio.sleep(self.slow)
        if self.broken:
            raise ConnectionError("down")
        self.entries[team_id, digest] = value
        return Stored(evicted=self.evicts, team_bytes=len(value))

    async def purge(self, team_id: str) -> int:
        gone = [k for k in self.entries if k[0] == team_id]
        for k in gone:
            del self.entries[k]
        return len(gone)

    async def team_bytes(self, team_id: str) -> int:
        return sum(len(v) for k, v in self.entries.items() if k[0] == team_id)

    async def aclose(self) -> None:
        pass


@pytest.fixture
def counted() -> Iterator[None]:
    metrics.enable(True)
    try:
        yield
    finally:
        metrics.enable(False)


def _plan(cache: ResponseCache, team: str = "team_a", headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    request = CanonicalRequest(model="p/m", messages=[Message(role="user", parts=[TextPart(text="hi")])])
    return cache.plan(team, "key_1", "team", False, headers or [], CHAT, request)


def _sample(family: Any, *labels: str) -> float:
    child = family.labels(*labels)
    return float(child._value.get())


async def test_a_lookup_waits_for_the_store_of_the_same_answer_under_way(counted: None) -> None:
    store = MemoryStore(slow=0.2, evicts=["team_z"])
    cache = ResponseCache(store, CacheSettings())
    hits = _sample(metrics.CACHE_LOOKUPS, "team_a", Result.HIT)
    evictions = _sample(metrics.CACHE_EVICTIONS, "team_z")
    first = _plan(cache)
    assert await cache.lookup(first) is None and first.result == Result.MISS
    cache.keep(first, CHAT, TEXT_BODY, 40)
    second = _plan(cache)
    entry = await cache.lookup(second)  # the store is still sleeping: the lookup waits for it
    assert entry is not None and second.result == Result.HIT and entry.cost_micros == 40
    assert _sample(metrics.CACHE_LOOKUPS, "team_a", Result.HIT) == hits + 1
    assert _sample(metrics.CACHE_EVICTIONS, "team_z") == evictions + 1
    assert _sample(metrics.CACHE_BYTES, "team_a") > 0
    await cache.aclose()


async def test_errors_tool_calls_skips_and_a_broken_store() -> None:
    store = MemoryStore()
    cache = ResponseCache(store, CacheSettings())
    plan = _plan(cache)
    cache.keep(plan, CHAT, TOOL_BODY, 10)  # tool calls: the team keeps them out
    await cache.aclose()
    assert store.entries == {}
    skipping = _plan(cache, headers=[(b"x-modelport-cache", b"skip")])
    assert await cache.lookup(skipping) is None and skipping.result == Result.SKIP
    cache.keep(skipping, CHAT, TEXT_BODY, 10)
    await cache.aclose()
    assert store.entries == {}
    broken = ResponseCache(MemoryStore(broken=True), CacheSettings())
    plan = _plan(broken)
    assert await broken.lookup(plan) is None and plan.result == Result.MISS
    broken.keep(plan, CHAT, TEXT_BODY, 10)  # logged, never raised
    await broken.aclose()
