"""A webhook delivery's status (`webhook_deliveries.status`) and the outcome of each of its attempts
(`webhook_attempts.outcome`): what the outbox writes, the sender moves on, the console shows and the
metrics count."""

from __future__ import annotations

from enum import StrEnum


class DeliveryStatus(StrEnum):
    # Due now or at `next_attempt_at_ms`; a sender claims it with a short lease while it tries.
    PENDING = "pending"
    # The receiver answered 2xx.
    DELIVERED = "delivered"
    # Given up: the retry schedule is used up, or the result expired before it could be sent.
    FAILED = "failed"
    # The receiver answered 410 Gone: no further attempt.
    STOPPED = "stopped"


class AttemptOutcome(StrEnum):
    # A 2xx answer within the time limit.
    DELIVERED = "delivered"
    # No answer, a timeout, a refused address, or any other status (3xx included: redirects are not followed).
    FAILED = "failed"
    # 410 Gone: the delivery stops.
    GONE = "gone"
    # 429: the next attempt waits at least the answer's `Retry-After`.
    RATE_LIMITED = "rate_limited"
