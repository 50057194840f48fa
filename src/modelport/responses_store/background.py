"""Background responses (`tables.background_responses`, `tables.background_response_events`): made by a
`POST /v1/responses` with `background` true, run by the gateway's runner on the task queue, read by the
retrieval and stream routes, cancelled by `POST /v1/responses/{id}/cancel`, pruned with the stored responses
(`ExpiredBackground`).

A row is `queued`, then `in_progress` while an attempt holds it (`attempt`, `lease_until_ms`), then one of
the finished statuses. Every write of a run names its attempt: a run whose lease was taken over, or whose
response was cancelled, writes nothing more.

A response's events are numbered in one sequence across its attempts: a new attempt discards the earlier
attempts' events and numbers its own from above the last number given (kept, when no event is left to show
it, as a `WATERMARK` row that no read returns), so a client resuming with `starting_after` never sees a
number twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms as wall_ms
from modelport.responses_store.store import usable_id
from modelport.responses_store.tables import background_response_events as ev
from modelport.responses_store.tables import background_responses as bt

QUEUED = "queued"
IN_PROGRESS = "in_progress"
FAILED = "failed"
CANCELLED = "cancelled"
PRUNE_BATCH = 200
EVENTS_PAGE = 500
# The event name of the row that keeps the last sequence number an earlier attempt gave (never read back).
WATERMARK = "modelport.watermark"


@dataclass(frozen=True, slots=True)
class Background:
    """A background response as read: whose, its status and its latest response object."""

    id: str
    team_id: str
    status: str
    response: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Claimed:
    """A run's hold on a background response: what it runs and as whom."""

    id: str
    team_id: str
    key_id: str
    request_id: str
    attempt: int
    body: dict[str, Any]
    headers: dict[str, str]
    response: dict[str, Any]
    first_sequence: int = 0  # the number of this attempt's first event (above every earlier attempt's)


@dataclass(frozen=True, slots=True)
class Event:
    sequence_number: int
    event: str | None
    data: str


class BackgroundStore:
    def __init__(self, engine: AsyncEngine, lifetime_ms: int, clock: Callable[[], int] = wall_ms) -> None:
        self.engine = engine
        self.lifetime_ms = lifetime_ms
        self._clock = clock

    async def create(
        self,
        *,
        response_id: str,
        team_id: str,
        key_id: str,
        request_id: str,
        body: dict[str, Any],
        headers: dict[str, str],
        response: dict[str, Any],
    ) -> None:
        now = self._clock()
        row = {
            "id": response_id,
            "team_id": team_id,
            "key_id": key_id,
            "request_id": request_id,
            "status": QUEUED,
            "body": orjson.dumps(body).decode(),
            "headers": orjson.dumps(headers).decode(),
            "response": orjson.dumps(response).decode(),
            "attempt": 0,
            "lease_until_ms": 0,
            "created_at_ms": now,
            "updated_at_ms": now,
            "expires_at_ms": now + self.lifetime_ms,
        }
        async with self.engine.begin() as conn:
            await conn.execute(insert(bt).values(**row))

    async def get(self, team_id: str, response_id: str) -> Background | None:
        """The team's background response, unless unknown, another team's or past its lifetime."""
        if not usable_id(response_id):
            return None
        query = select(bt.c.id, bt.c.team_id, bt.c.status, bt.c.response).where(
            and_(bt.c.id == response_id, bt.c.team_id == team_id, bt.c.expires_at_ms > self._clock())
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return None if row is None else Background(row.id, row.team_id, row.status, orjson.loads(row.response))

    async def claim(
        self, response_id: str, *, lease_ms: int, max_attempts: int, gave_up: dict[str, Any]
    ) -> Claimed | None:
        """Take a queued response, or one whose run's lease ran out, for a new attempt (its earlier events
        go: the new attempt streams from the start, numbered above them). None: nothing to run (finished,
        cancelled, held by a live run). Past `max_attempts` it fails instead, with `gave_up` as its error."""
        now = self._clock()
        async with self.engine.begin() as conn:
            row = (
                await conn.execute(
                    select(bt).where(
                        and_(
                            bt.c.id == response_id,
                            or_(bt.c.status == QUEUED, and_(bt.c.status == IN_PROGRESS, bt.c.lease_until_ms <= now)),
                        )
                    )
                )
            ).first()
            if row is None:
                return None
            response = orjson.loads(row.response)
            attempt = row.attempt + 1
            if attempt > max_attempts:
                failed = {**response, "status": FAILED, "error": gave_up}
                await conn.execute(
                    update(bt)
                    .where(and_(bt.c.id == response_id, bt.c.attempt == row.attempt, bt.c.status == row.status))
                    .values(status=FAILED, response=orjson.dumps(failed).decode(), updated_at_ms=now)
                )
                return None
            running = {**response, "status": IN_PROGRESS}
            taken = await conn.execute(
                update(bt)
                .where(and_(bt.c.id == response_id, bt.c.attempt == row.attempt, bt.c.status == row.status))
                .values(
                    status=IN_PROGRESS,
                    attempt=attempt,
                    lease_until_ms=now + lease_ms,
                    response=orjson.dumps(running).decode(),
                    updated_at_ms=now,
                )
            )
            if not taken.rowcount:
                return None  # another process took it first
            last = (
                await conn.execute(select(func.max(ev.c.sequence_number)).where(ev.c.response_id == response_id))
            ).scalar()
            first = 0 if last is None else int(last) + 1
            await conn.execute(delete(ev).where(ev.c.response_id == response_id))
            if last is not None:
                await conn.execute(
                    insert(ev).values(response_id=response_id, sequence_number=last, event=WATERMARK, data="")
                )
        return Claimed(
            row.id,
            row.team_id,
            row.key_id,
            row.request_id,
            attempt,
            orjson.loads(row.body),
            orjson.loads(row.headers),
            running,
            first,
        )

    async def renew(self, claimed: Claimed, lease_ms: int) -> bool:
        """Extend the run's lease; False when the run no longer holds the response (cancelled, taken over)."""
        now = self._clock()
        async with self.engine.begin() as conn:
            held = await conn.execute(
                update(bt).where(_held(claimed)).values(lease_until_ms=now + lease_ms, updated_at_ms=now)
            )
        return bool(held.rowcount)

    async def add_events(self, claimed: Claimed, events: Sequence[Event]) -> bool:
        """Keep the run's events (False, nothing kept: the run no longer holds the response)."""
        if not events:
            return True
        async with self.engine.begin() as conn:
            held = await conn.execute(update(bt).where(_held(claimed)).values(updated_at_ms=self._clock()))
            if not held.rowcount:
                return False
            await conn.execute(
                insert(ev),
                [
                    {
                        "response_id": claimed.id,
                        "sequence_number": e.sequence_number,
                        "event": e.event or "",
                        "data": e.data,
                    }
                    for e in events
                ],
            )
        return True

    async def finish(self, claimed: Claimed, status: str, response: dict[str, Any]) -> bool:
        """The run's end: its status and final response object (False: it no longer held the response)."""
        async with self.engine.begin() as conn:
            done = await conn.execute(
                update(bt)
                .where(_held(claimed))
                .values(status=status, response=orjson.dumps(response).decode(), updated_at_ms=self._clock())
            )
        return bool(done.rowcount)

    async def release(self, claimed: Claimed) -> None:
        """The run stops without an end (its process is going down): queued again, for the next attempt."""
        queued = {**claimed.response, "status": QUEUED}
        async with self.engine.begin() as conn:
            await conn.execute(
                update(bt)
                .where(_held(claimed))
                .values(status=QUEUED, lease_until_ms=0, response=orjson.dumps(queued).decode(), updated_at_ms=0)
            )

    async def cancel(
        self, team_id: str, response_id: str, mark: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> Background | None:
        """Cancel a queued or running response (its object becomes `mark(object)`); a finished one is
        returned as it is. None: the team has no such response."""
        for _ in range(3):  # a run's write may come between the read and the swap: read again
            found = await self.get(team_id, response_id)
            if found is None or found.status not in (QUEUED, IN_PROGRESS):
                return found
            cancelled = mark(found.response)
            async with self.engine.begin() as conn:
                swapped = await conn.execute(
                    update(bt)
                    .where(and_(bt.c.id == response_id, bt.c.team_id == team_id, bt.c.status == found.status))
                    .values(status=CANCELLED, response=orjson.dumps(cancelled).decode(), updated_at_ms=self._clock())
                )
            if swapped.rowcount:
                return Background(found.id, team_id, CANCELLED, cancelled)
        return await self.get(team_id, response_id)

    async def cancelled_during(self, claimed: Claimed) -> bool:
        """Was the response cancelled (`cancel`) while this attempt held it? False: it was taken over, or
        released, by another attempt."""
        query = select(bt.c.status, bt.c.attempt).where(bt.c.id == claimed.id)
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return row is not None and row.status == CANCELLED and row.attempt == claimed.attempt

    async def status(self, response_id: str) -> str | None:
        async with self.engine.connect() as conn:
            return (await conn.execute(select(bt.c.status).where(bt.c.id == response_id))).scalar()

    async def events_after(self, response_id: str, after: int) -> list[Event]:
        """The kept events numbered above `after`, in order (a page of them)."""
        query = (
            select(ev.c.sequence_number, ev.c.event, ev.c.data)
            .where(and_(ev.c.response_id == response_id, ev.c.sequence_number > after, ev.c.event != WATERMARK))
            .order_by(ev.c.sequence_number)
            .limit(EVENTS_PAGE)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [Event(r.sequence_number, r.event or None, r.data) for r in rows]

    async def delete(self, team_id: str, response_id: str) -> bool:
        if not usable_id(response_id):
            return False
        async with self.engine.begin() as conn:
            found = await conn.execute(delete(bt).where(and_(bt.c.id == response_id, bt.c.team_id == team_id)))
            if found.rowcount:
                await conn.execute(delete(ev).where(ev.c.response_id == response_id))
        return bool(found.rowcount)

    async def needing_a_run(self, *, queued_before_ms: int) -> list[str]:
        """Queued responses the queue may have lost (queued before the cutoff), and running ones whose
        run's lease ran out (its process died): the reconciler queues them again."""
        now = self._clock()
        query = (
            select(bt.c.id)
            .where(
                or_(
                    and_(bt.c.status == QUEUED, bt.c.updated_at_ms <= queued_before_ms),
                    and_(bt.c.status == IN_PROGRESS, bt.c.lease_until_ms <= now),
                )
            )
            .limit(500)
        )
        async with self.engine.connect() as conn:
            return list((await conn.execute(query)).scalars().all())


def _held(claimed: Claimed) -> Any:
    return and_(bt.c.id == claimed.id, bt.c.attempt == claimed.attempt, bt.c.status == IN_PROGRESS)


class ExpiredBackground:
    """The retention pruner's target for background responses past the store lifetime, with their events."""

    name = "background_responses"

    async def prune(self, engine: AsyncEngine, now_ms: int) -> dict[str, int]:
        removed = events = 0
        while True:
            async with engine.begin() as conn:
                ids = (
                    (await conn.execute(select(bt.c.id).where(bt.c.expires_at_ms <= now_ms).limit(PRUNE_BATCH)))
                    .scalars()
                    .all()
                )
                for response_id in ids:
                    gone = await conn.execute(delete(ev).where(ev.c.response_id == response_id))
                    events += gone.rowcount or 0
                    await conn.execute(delete(bt).where(bt.c.id == response_id))
            removed += len(ids)
            if len(ids) < PRUNE_BATCH:
                return {"background_responses": removed, "background_response_events": events}
