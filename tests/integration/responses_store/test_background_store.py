"""The background response rows on both databases: claims and leases (a lapsed run is taken over, its events
go, its writes stop), cancellation, the reconciler's scan, release, isolation and pruning; event numbers go on
across attempts."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelport.responses_store.background import BackgroundStore, Event, ExpiredBackground
from tests.support.databases import BACKENDS, migrated_engine

GAVE_UP = {"code": "server_error", "message": "gave up"}


def _queued(rid: str) -> dict[str, object]:
    return {"id": rid, "object": "response", "status": "queued", "background": True, "output": []}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_claim_lease_takeover_cancel_and_prune(backend: str, tmp_path: Path) -> None:
    now = [1_000_000]
    async with migrated_engine(backend, tmp_path) as engine:
        store = BackgroundStore(engine, lifetime_ms=100_000, clock=lambda: now[0])
        for rid in ("resp_a", "resp_b"):
            await store.create(
                response_id=rid,
                team_id="team_a",
                key_id="key_a",
                request_id="req_" + rid,
                body={"model": "m", "input": rid},
                headers={"x-session-id": "s"},
                response=_queued(rid),
            )
        assert await store.get("team_b", "resp_a") is None  # another team's
        assert sorted(await store.needing_a_run(queued_before_ms=now[0])) == ["resp_a", "resp_b"]

        first = await store.claim("resp_a", lease_ms=1_000, max_attempts=2, gave_up=GAVE_UP)
        assert first is not None and first.attempt == 1 and first.request_id == "req_resp_a"
        assert first.body == {"model": "m", "input": "resp_a"} and first.headers == {"x-session-id": "s"}
        assert await store.claim("resp_a", lease_ms=1_000, max_attempts=2, gave_up=GAVE_UP) is None  # held
        assert await store.add_events(first, [Event(0, "response.created", "{}"), Event(1, None, "{}")])
        assert [e.sequence_number for e in await store.events_after("resp_a", 0)] == [1]

        # The lease runs out (the process died): the reconciler finds it, a new attempt takes it over.
        now[0] += 2_000
        assert await store.needing_a_run(queued_before_ms=0) == ["resp_a"]
        second = await store.claim("resp_a", lease_ms=1_000, max_attempts=2, gave_up=GAVE_UP)
        assert second is not None and second.attempt == 2 and second.request_id == first.request_id
        assert await store.events_after("resp_a", -1) == []  # the new attempt streams from the start
        assert first.first_sequence == 0 and second.first_sequence == 2  # numbered above what was given
        assert not await store.renew(first, 1_000) and not await store.add_events(first, [Event(0, None, "{}")])
        assert not await store.finish(first, "completed", {"status": "completed"})
        assert await store.renew(second, 1_000)
        assert await store.finish(second, "completed", {"id": "resp_a", "status": "completed"})
        done = await store.get("team_a", "resp_a")
        assert done is not None and done.status == "completed" and done.response["status"] == "completed"
        assert await store.claim("resp_a", lease_ms=1_000, max_attempts=2, gave_up=GAVE_UP) is None

        # A finished one is not cancelled; a queued one is, and is never claimed after.
        kept = await store.cancel("team_a", "resp_a", lambda r: {**r, "status": "cancelled"})
        assert kept is not None and kept.status == "completed"
        assert await store.cancel("team_b", "resp_b", lambda r: r) is None
        cancelled = await store.cancel("team_a", "resp_b", lambda r: {**r, "status": "cancelled"})
        assert cancelled is not None and cancelled.status == "cancelled"
        assert await store.claim("resp_b", lease_ms=1_000, max_attempts=2, gave_up=GAVE_UP) is None

        # Released by a process going down: queued again at once; past the attempts it fails.
        await store.create(
            response_id="resp_c",
            team_id="team_a",
            key_id="key_a",
            request_id="req_c",
            body={},
            headers={},
            response=_queued("resp_c"),
        )
        run = await store.claim("resp_c", lease_ms=60_000, max_attempts=1, gave_up=GAVE_UP)
        assert run is not None
        await store.release(run)
        assert await store.needing_a_run(queued_before_ms=now[0] - 10_000) == ["resp_c"]
        assert await store.claim("resp_c", lease_ms=1_000, max_attempts=1, gave_up=GAVE_UP) is None
        failed = await store.get("team_a", "resp_c")
        assert failed is not None and failed.status == "failed" and failed.response["error"] == GAVE_UP

        assert await store.delete("team_a", "resp_b") and await store.get("team_a", "resp_b") is None
        now[0] += 200_000
        assert await store.get("team_a", "resp_a") is None  # past its lifetime
        assert await ExpiredBackground().prune(engine, now[0]) == {
            "background_responses": 2,
            "background_response_events": 1,  # resp_a's watermark of the numbers its first attempt gave
        }


@pytest.mark.parametrize("backend", BACKENDS)
async def test_event_numbers_go_on_across_attempts(backend: str, tmp_path: Path) -> None:
    """Each attempt numbers its events above every number an earlier attempt gave, even when an attempt in
    between kept none; a client resuming after the numbers it saw gets the new attempt from its start."""
    async with migrated_engine(backend, tmp_path) as engine:
        store = BackgroundStore(engine, lifetime_ms=100_000)
        await store.create(
            response_id="resp_n",
            team_id="team_a",
            key_id="key_a",
            request_id="req_n",
            body={},
            headers={},
            response=_queued("resp_n"),
        )
        one = await store.claim("resp_n", lease_ms=60_000, max_attempts=5, gave_up=GAVE_UP)
        assert one is not None and one.first_sequence == 0
        assert await store.add_events(one, [Event(n, "e1", "{}") for n in range(4)])
        await store.release(one)
        two = await store.claim("resp_n", lease_ms=60_000, max_attempts=5, gave_up=GAVE_UP)
        assert two is not None and two.first_sequence == 4
        assert await store.events_after("resp_n", -1) == []  # the first attempt's events are gone
        await store.release(two)  # cut before it kept any event
        three = await store.claim("resp_n", lease_ms=60_000, max_attempts=5, gave_up=GAVE_UP)
        assert three is not None and three.first_sequence == 4
        assert await store.events_after("resp_n", -1) == []
        assert await store.add_events(three, [Event(4, "e3", "{}"), Event(5, "e3", "{}")])
        # A client that saw 0..3 of the first attempt resumes after 3: the third attempt from its start.
        assert [(e.sequence_number, e.event) for e in await store.events_after("resp_n", 3)] == [(4, "e3"), (5, "e3")]
        await store.release(three)
        four = await store.claim("resp_n", lease_ms=60_000, max_attempts=5, gave_up=GAVE_UP)
        assert four is not None and four.first_sequence == 6
