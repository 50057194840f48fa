"""The response store on both databases: per team, chains oldest first, delete, expiry and pruning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modelport.clock import now_ms as wall_ms
from modelport.responses_store.store import ExpiredResponses, ResponseStore
from modelport.retention.pruner import build_pruner
from modelport.settings import RetentionSettings
from tests.support.databases import BACKENDS, migrated_engine


def _response(rid: str, text: str) -> dict[str, Any]:
    return {"id": rid, "object": "response", "output": [{"type": "message", "role": "assistant", "content": text}]}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_store_chain_delete_expire_and_prune(backend: str, tmp_path: Path) -> None:
    now = [1_000_000]
    async with migrated_engine(backend, tmp_path) as engine:
        store = ResponseStore(engine, lifetime_ms=10_000, clock=lambda: now[0])
        await store.save("team_a", "resp_1", None, [{"role": "user", "content": "one"}], _response("resp_1", "1"))
        await store.save("team_a", "resp_2", "resp_1", [{"role": "user", "content": "two"}], _response("resp_2", "2"))
        now[0] += 5_000
        await store.save("team_a", "resp_3", "resp_2", [], _response("resp_3", "3"))

        chain = await store.chain("team_a", "resp_3")
        assert chain is not None
        assert [s.id for s in chain] == ["resp_1", "resp_2", "resp_3"]
        assert chain[1].input_items == [{"role": "user", "content": "two"}]
        assert chain[1].response == _response("resp_2", "2")
        # Another team sees none of them.
        assert await store.get("team_b", "resp_1") is None
        assert await store.chain("team_b", "resp_3") is None
        assert not await store.delete("team_b", "resp_1")

        # Saved again under the same id: replaced, not doubled.
        await store.save("team_a", "resp_3", "resp_2", [], _response("resp_3", "3bis"))
        again = await store.get("team_a", "resp_3")
        assert again is not None and again.response == _response("resp_3", "3bis")

        # A deleted ancestor ends the chain there.
        assert await store.delete("team_a", "resp_2")
        assert await store.get("team_a", "resp_2") is None
        chain = await store.chain("team_a", "resp_3")
        assert chain is not None and [s.id for s in chain] == ["resp_3"]

        # Past its lifetime a response is gone for reads at once, and the pruner removes its row.
        now[0] += 6_000
        assert await store.get("team_a", "resp_1") is None
        assert await store.get("team_a", "resp_3") is not None
        assert await ExpiredResponses().prune(engine, now[0]) == {"stored_responses": 1}
        now[0] += 10_000
        assert await store.get("team_a", "resp_3") is None
        assert await ExpiredResponses().prune(engine, now[0]) == {"stored_responses": 1}
        assert await ExpiredResponses().prune(engine, now[0]) == {"stored_responses": 0}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_retention_pruner_removes_expired_responses(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        past = ResponseStore(engine, lifetime_ms=1_000, clock=lambda: wall_ms() - 60_000)
        await past.save("team_a", "resp_old", None, [], _response("resp_old", "old"))
        live = ResponseStore(engine, lifetime_ms=60_000)
        await live.save("team_a", "resp_new", None, [], _response("resp_new", "new"))
        pruner = build_pruner(engine, RetentionSettings(), lock_file=tmp_path / "retention.lock", archive_store=None)
        report = await pruner.run_once()
        assert report is not None and report.removed["stored_responses"] == 1
        assert await live.get("team_a", "resp_new") is not None
