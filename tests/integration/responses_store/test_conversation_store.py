"""The conversation store on both databases: per team, items in order with unique ids, concurrent turns,
lifetime from the last use, and the retention pruner."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from modelport.clock import now_ms as wall_ms
from modelport.responses_store.conversations import ConversationStore, ExpiredConversations
from modelport.retention.pruner import build_pruner
from modelport.settings import RetentionSettings
from tests.support.databases import BACKENDS, migrated_engine

_ids = itertools.count()


def _new_id(item: dict[str, Any]) -> str:
    return f"item_{next(_ids)}"


def _message(text: str, item_id: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return item if item_id is None else {"id": item_id, **item}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_conversations_keep_items_in_order_per_team_and_expire_from_last_use(
    backend: str, tmp_path: Path
) -> None:
    now = [1_000_000]
    async with migrated_engine(backend, tmp_path) as engine:
        store = ConversationStore(engine, lifetime_ms=10_000, clock=lambda: now[0])
        made = await store.create("team_a", {"topic": "birds"}, [_message("one")], _new_id)
        assert made.id.startswith("conv_") and made.metadata == {"topic": "birds"}
        added = await store.append("team_a", made.id, [_message("two", "msg_x"), _message("three", "msg_x")], _new_id)
        assert added is not None
        # An id the conversation has already is replaced: every item stays addressable on its own.
        assert added[0]["id"] == "msg_x" and added[1]["id"] != "msg_x"
        items = await store.items("team_a", made.id)
        assert items is not None
        assert [i["content"][0]["text"] for i in items] == ["one", "two", "three"]
        assert await store.item("team_a", made.id, "msg_x") == added[0]

        # Another team sees none of it.
        assert await store.get("team_b", made.id) is None
        assert await store.items("team_b", made.id) is None
        assert await store.append("team_b", made.id, [_message("intruder")], _new_id) is None
        assert not await store.delete_item("team_b", made.id, "msg_x")
        assert not await store.delete("team_b", made.id)

        # Concurrent turns take distinct places.
        await asyncio.gather(*(store.append("team_a", made.id, [_message(f"c{n}")], _new_id) for n in range(8)))
        items = await store.items("team_a", made.id)
        assert items is not None and len(items) == 11

        assert await store.delete_item("team_a", made.id, "msg_x")
        assert await store.item("team_a", made.id, "msg_x") is None

        # Used 8 s after creation: it lives 10 s from then, not from its creation.
        now[0] += 8_000
        assert await store.items("team_a", made.id, touch=True) is not None
        now[0] += 8_000
        assert await store.get("team_a", made.id) is not None
        assert await ExpiredConversations().prune(engine, now[0]) == {"conversations": 0, "conversation_items": 0}
        now[0] += 3_000
        assert await store.get("team_a", made.id) is None
        assert await store.append("team_a", made.id, [_message("late")], _new_id) is None
        assert await ExpiredConversations().prune(engine, now[0]) == {"conversations": 1, "conversation_items": 10}

        other = await store.create("team_a", {}, [], _new_id)
        assert await store.delete("team_a", other.id)
        assert await store.get("team_a", other.id) is None


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_retention_pruner_removes_unused_conversations(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        past = ConversationStore(engine, lifetime_ms=1_000, clock=lambda: wall_ms() - 60_000)
        old = await past.create("team_a", {}, [_message("old")], _new_id)
        live = ConversationStore(engine, lifetime_ms=60_000)
        new = await live.create("team_a", {}, [_message("new")], _new_id)
        pruner = build_pruner(engine, RetentionSettings(), lock_file=tmp_path / "retention.lock", archive_store=None)
        report = await pruner.run_once()
        assert report is not None
        assert report.removed["conversations"] == 1 and report.removed["conversation_items"] == 1
        assert await live.get("team_a", new.id) is not None
        assert await live.get("team_a", old.id) is None
