"""Two runs of one background response on a real database (both backends), the first losing its lease
(stalled past it) to the second: only the attempt that holds the response writes its end and is billed; the
one that lost it writes nothing (no events, no final response, no stored response) and is settled unbilled,
whether it notices when it ends or when its lease renewal fails. The pipeline is a stand-in whose
settlement is decided as the real one's is (`BackgroundRun.settle`, read from the run's request scope)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request

from modelport.accounts.auth import AuthContext
from modelport.core.codec import ProtocolCodec
from modelport.core.sse import sse_frame
from modelport.gateway.answer import BodyAnswer, StreamAnswer
from modelport.gateway.background_responses import BackgroundResponses
from modelport.gateway.context import BackgroundRun
from modelport.queue import JobKind
from modelport.responses_store.background import BackgroundStore
from modelport.responses_store.store import ResponseStore

RID = "resp_takeover"
AUTH = AuthContext(key_id="key_a", key_prefix="sk-a", team_id="team_a", team_name="a", tier="default")
LIFETIME_MS = 3_600_000
Frames = Callable[[], AsyncGenerator[bytes, None]]


class _Queue:
    async def enqueue(self, ids: list[str], kind: JobKind) -> None:
        pass


async def _key(key_id: str) -> AuthContext | None:
    return AUTH


def _frames(text: str, *, then: Callable[[], Awaitable[None]] | None = None) -> Frames:
    """A Responses stream: created, (waiting for `then`), a delta and completed with `text`."""

    async def chunks() -> AsyncGenerator[bytes, None]:
        shell = {"id": "resp_upstream", "object": "response", "status": "in_progress", "output": []}
        yield sse_frame("response.created", orjson.dumps({"type": "response.created", "response": shell}))
        if then is not None:
            await then()
        yield sse_frame(
            "response.output_text.delta", orjson.dumps({"type": "response.output_text.delta", "delta": text})
        )
        done = {
            **shell,
            "status": "completed",
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}],
        }
        yield sse_frame("response.completed", orjson.dumps({"type": "response.completed", "response": done}))

    return chunks


class _Pipeline:
    """Stands in for `TextGateway.handle_body`: answers with `stream` and records how the run settled."""

    def __init__(self, name: str, stream: Frames, settled: list[tuple[str, str]]) -> None:
        self.name = name
        self.stream = stream
        self.settled = settled
        self.called = asyncio.Event()

    async def __call__(
        self, request: Request, codec: ProtocolCodec, auth: AuthContext, body: dict[str, Any], raw: bytes
    ) -> BodyAnswer | StreamAnswer:
        run = request.scope["state"]["background_run"]
        assert isinstance(run, BackgroundRun)
        self.called.set()
        answer = StreamAnswer(self.stream())
        answer.after = lambda: run.settle(
            lambda: self.settled.append((self.name, "billed")), lambda: self.settled.append((self.name, "unbilled"))
        )
        return answer


def _runner(
    engine: AsyncEngine, pipeline: _Pipeline, *, poll_seconds: float, lease_seconds: float
) -> BackgroundResponses:
    runner = BackgroundResponses(
        BackgroundStore(engine, LIFETIME_MS),
        ResponseStore(engine, LIFETIME_MS),
        _Queue(),  # type: ignore[arg-type]
        _key,
        poll_seconds=poll_seconds,
        lease_seconds=lease_seconds,
        max_attempts=5,
    )
    runner.bind(pipeline)
    return runner


async def _create(store: BackgroundStore) -> None:
    await store.create(
        response_id=RID,
        team_id=AUTH.team_id,
        key_id=AUTH.key_id,
        request_id="req_takeover",
        body={"model": "fake/responses", "input": "hello"},
        headers={},
        response={"id": RID, "object": "response", "status": "queued", "background": True, "output": []},
    )


async def _until(check: Callable[[], Awaitable[bool]], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def _take_over(runner: BackgroundResponses, pipeline: _Pipeline) -> None:
    """Run the response on `runner` once the first run's lease has lapsed (a claim before that finds it held)."""

    async def lapsed() -> bool:
        return await runner.store.needing_a_run(queued_before_ms=0) == [RID]

    await _until(lapsed, "the first run's lease to lapse")
    await asyncio.wait_for(runner.run(RID), 30)
    assert pipeline.called.is_set()


async def _texts(engine: AsyncEngine) -> tuple[str, str, list[str]]:
    """The row's status, its final output text and the kept events' deltas."""
    store = BackgroundStore(engine, LIFETIME_MS)
    found = await store.get(AUTH.team_id, RID)
    assert found is not None
    text = "".join(c["text"] for item in found.response.get("output", []) for c in item.get("content", []))
    deltas = [orjson.loads(e.data).get("delta", "") for e in await store.events_after(RID, -1)]
    return found.status, text, deltas


async def test_a_run_that_ends_after_losing_its_lease_writes_nothing_and_is_unbilled(engine: AsyncEngine) -> None:
    settled: list[tuple[str, str]] = []
    gate = asyncio.Event()

    async def stall() -> None:
        await gate.wait()

    # The first run renews its lease every 30 s, the lease lasts 1 s: it stalls past it.
    first = _Pipeline("first", _frames("from the first", then=stall), settled)
    slow = _runner(engine, first, poll_seconds=30, lease_seconds=1)
    await _create(slow.store)
    running = asyncio.create_task(slow.run(RID))
    await asyncio.wait_for(first.called.wait(), 30)
    second = _Pipeline("second", _frames("from the second"), settled)
    await _take_over(_runner(engine, second, poll_seconds=0.2, lease_seconds=30), second)
    assert settled == [("second", "billed")]
    # The first run's upstream now finishes: its end is refused (it is no longer the response's attempt).
    gate.set()
    await asyncio.wait_for(running, 30)
    assert settled == [("second", "billed"), ("first", "unbilled")]
    status, text, deltas = await _texts(engine)
    assert (status, text) == ("completed", "from the second")
    assert deltas == ["", "from the second", ""]
    stored = await ResponseStore(engine, LIFETIME_MS).get(AUTH.team_id, RID)
    assert stored is not None and "from the second" in str(stored) and "from the first" not in str(stored)


async def test_a_run_whose_renewal_finds_it_taken_over_stops_unbilled(engine: AsyncEngine) -> None:
    settled: list[tuple[str, str]] = []

    async def forever() -> None:
        await asyncio.Event().wait()

    # The first run renews every 2 s a lease of 0.5 s: another takes it over in between; its next renewal
    # fails and it stops, its upstream still streaming.
    first = _Pipeline("first", _frames("from the first", then=forever), settled)
    slow = _runner(engine, first, poll_seconds=2, lease_seconds=0.5)
    await _create(slow.store)
    running = asyncio.create_task(slow.run(RID))
    await asyncio.wait_for(first.called.wait(), 30)
    second = _Pipeline("second", _frames("from the second"), settled)
    await _take_over(_runner(engine, second, poll_seconds=0.2, lease_seconds=30), second)
    await asyncio.wait_for(running, 30)
    assert sorted(settled) == [("first", "unbilled"), ("second", "billed")]
    status, text, deltas = await _texts(engine)
    assert (status, text) == ("completed", "from the second")
    assert "from the first" not in deltas
