"""The webhook sender: claims due outbox rows and delivers them through the SSRF-safe fetcher.

Rules: only a 2xx answer within `timeout_seconds` counts; a 3xx is a failure (no redirect is followed);
`410 Gone` stops the delivery; `429` and `503` wait at least their `Retry-After` (read leniently, and only
on those: `net.retry_after`); other failures retry on the schedule (Standard Webhooks': 0, 5 s, 5 min,
30 min, 2 h, 5 h, 10 h, 10 h) with jitter, and never after the result expires. Every attempt is recorded,
whatever goes wrong in it. A team has at most `per_team_concurrency` of a process's `concurrency` slots
(the operator's alerts, which have no team, count as one more team).

Every row is signed with Standard Webhooks headers; the keys come from a `SecretLookup`: by default the
row's team's secret (`team_secret_lookup`); a composition that sends operator alerts passes a lookup that
answers for rows without a team too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.metrics import WEBHOOK_ATTEMPTS, WEBHOOK_FINAL
from modelport.net import FetchError, SafeFetcher
from modelport.net.retry_after import retry_after_seconds
from modelport.settings import WebhookSettings
from modelport.webhooks import outbox
from modelport.webhooks import secrets as team_secrets
from modelport.webhooks.secret_box import SecretBox
from modelport.webhooks.signing import signed_headers
from modelport.webhooks.states import AttemptOutcome, DeliveryStatus

log = logging.getLogger("modelport.webhooks")

# The signing keys of a delivery at a time (ms): the current secret first, then one still valid after a
# rotation. An exception or an empty list fails the attempt (recorded; the schedule goes on).
SecretLookup = Callable[[outbox.Delivery, int], Awaitable[list[str]]]


class NoSigningSecret(Exception):
    """No secret signs this delivery (e.g. an operator alert and no operator secret is configured)."""


def team_secret_lookup(engine: AsyncEngine, box: SecretBox) -> SecretLookup:
    """The team's webhook secret (made on first use); rows without a team have none here."""

    async def lookup(delivery: outbox.Delivery, at_ms: int) -> list[str]:
        if delivery.team_id is None:
            raise NoSigningSecret("no secret configured for operator alerts")
        return (await team_secrets.get_or_create(engine, box, delivery.team_id)).signing(at_ms)

    return lookup


class WebhookSender:
    def __init__(
        self,
        engine: AsyncEngine,
        fetcher: SafeFetcher,
        settings: WebhookSettings,
        box: SecretBox,
        *,
        secrets: SecretLookup | None = None,
    ) -> None:
        self._engine = engine
        # Opens the teams' signing secrets (stored encrypted) unless the composition passes its own lookup.
        self._secrets = secrets or team_secret_lookup(engine, box)
        self._fetcher = fetcher
        self._settings = settings
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._inflight: set[asyncio.Task[None]] = set()
        self._per_team: dict[str | None, int] = {}  # deliveries in flight per team (None: the operator's)

    def wake(self) -> None:
        """This process wrote an outbox row (a task's transition, a notification): look now, not at the next
        poll."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.send_due()
            except Exception:
                log.exception("webhook sender pass failed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.poll_interval_seconds):
                    await _first(stop, self._wake)
        for task in list(self._inflight):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), timeout=self._settings.timeout_seconds + 1)

    async def send_due(self) -> None:
        """Claim due deliveries while slots are free. A team holds at most `per_team_concurrency` of this
        process's slots, and teams at that share are left out of the query, so one team's slow or odd
        receiver (and its backlog of due rows) cannot keep other teams' events waiting."""
        per_team = self._settings.per_team_concurrency
        while not self._slots.locked():
            busy = [team for team, n in self._per_team.items() if n >= per_team]
            due = await outbox.due(self._engine, limit=self._settings.concurrency * 4, exclude_teams=busy)
            started = 0
            for delivery_id, team_id in due:
                if self._slots.locked():
                    return
                if self._per_team.get(team_id, 0) >= per_team:
                    continue
                claimed = await outbox.claim(
                    self._engine, delivery_id, claim_ms=int(self._settings.claim_seconds * 1000)
                )
                if claimed is None:
                    continue
                await self._slots.acquire()
                self._per_team[team_id] = self._per_team.get(team_id, 0) + 1
                task = asyncio.create_task(self._deliver(claimed))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
                started += 1
            if not started or len(due) < self._settings.concurrency * 4:
                return  # nothing more to take now (rows of busy teams wait for their next pass)

    async def _deliver(self, claimed: outbox.Delivery) -> None:
        try:
            await self.deliver(claimed)
        except Exception:
            log.exception("webhook %s: delivery failed unexpectedly", claimed.id)
        finally:
            self._slots.release()
            left = self._per_team.get(claimed.team_id, 1) - 1
            if left > 0:
                self._per_team[claimed.team_id] = left
            else:
                self._per_team.pop(claimed.team_id, None)

    async def deliver(self, claimed: outbox.Delivery) -> None:
        started = now_ms()
        if started >= claimed.give_up_at_ms:
            ended = await outbox.record(
                self._engine, claimed, None, status=DeliveryStatus.FAILED, next_attempt_at_ms=started
            )
            if ended:
                WEBHOOK_FINAL.labels(DeliveryStatus.FAILED).inc()
            log.warning("webhook %s: result expired before delivery; giving up", claimed.id)
            return
        status_code: int | None = None
        error: str | None = None
        retry_after: float | None = None
        try:
            keys = await self._secrets(claimed, started)
            if not keys:
                raise NoSigningSecret("no signing secret for this delivery")
            headers = signed_headers(claimed.id, claimed.payload, keys, started)
            answer = await self._fetcher.send(
                claimed.url, body=claimed.payload.encode(), headers=headers, time_limit=self._settings.timeout_seconds
            )
            status_code = answer.status
            if status_code in (429, 503):  # the only answers whose Retry-After means "wait"
                retry_after = retry_after_seconds(answer.headers.get("Retry-After"))
        except FetchError as exc:
            error = f"{exc.kind}: {exc.detail}"
        except NoSigningSecret as exc:
            error = str(exc)
        except Exception as exc:
            # Whatever happened, the attempt is recorded and the schedule moves on: an attempt left
            # unrecorded would go again every time its claim ran out, for as long as the result lives.
            log.exception("webhook %s: the attempt failed unexpectedly", claimed.id)
            error = f"internal error: {type(exc).__name__}"
        duration = now_ms() - started
        attempt_no = claimed.attempts + 1

        if status_code is not None and 200 <= status_code < 300:
            attempt = outbox.Attempt(started, duration, status_code, AttemptOutcome.DELIVERED, None)
            await self._record(claimed, attempt, DeliveryStatus.DELIVERED, started)
            return
        if status_code == 410:
            attempt = outbox.Attempt(started, duration, status_code, AttemptOutcome.GONE, "receiver answered 410 Gone")
            await self._record(claimed, attempt, DeliveryStatus.STOPPED, started)
            return
        if status_code is not None and error is None:
            error = f"receiver answered HTTP {status_code}"
            if 300 <= status_code < 400:
                error += " (redirects are not followed)"
        outcome = AttemptOutcome.RATE_LIMITED if status_code == 429 else AttemptOutcome.FAILED
        attempt = outbox.Attempt(started, duration, status_code, outcome, error)

        schedule = self._settings.schedule_seconds
        if attempt_no >= len(schedule):
            await self._record(claimed, attempt, DeliveryStatus.FAILED, started)
            return
        delay = schedule[attempt_no] * (1 + random.uniform(-1, 1) * self._settings.jitter_fraction)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self._settings.max_retry_after_seconds))
        next_at = now_ms() + int(delay * 1000)
        if next_at >= claimed.give_up_at_ms:
            await self._record(claimed, attempt, DeliveryStatus.FAILED, started)
            return
        await self._record(claimed, attempt, DeliveryStatus.PENDING, next_at)

    async def _record(
        self, claimed: outbox.Delivery, attempt: outbox.Attempt, status: DeliveryStatus, next_at_ms: int
    ) -> None:
        """Record the attempt and the row's next state; the delivery's end counts only if the claim was still
        ours (else another sender owns the row and will end it)."""
        WEBHOOK_ATTEMPTS.labels(attempt.outcome).inc()
        won = await outbox.record(self._engine, claimed, attempt, status=status, next_attempt_at_ms=next_at_ms)
        if won and status != DeliveryStatus.PENDING:
            WEBHOOK_FINAL.labels(status).inc()


async def _first(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
