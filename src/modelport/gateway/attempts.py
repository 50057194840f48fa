"""The one upstream attempt loop: a model's deployments in routing order (`routing.DeploymentRouter.plan`),
those cooling down left out, each sent the call until one answers, each answer judged.

Every upstream call of the gateway goes through `attempt_each`: a text request (`upstream_call.UpstreamCaller.open`)
and a token count (`count_tokens`). What differs between them is an `Attempt`: how a deployment is sent the
call, what an answer becomes, whether failures count against the deployment's health (a real call's do;
a free count's do not), and what is left when no deployment answered.

The judge: a 200 answers once it has shown its first content (`first_byte`: a stream that sends an error
or ends first, or a body that is an error object or not JSON, is a failure). A connection failure, a
retryable status (429, 5xx) or a deployment fault (a 404 the upstream says is about the model,
`upstream_errors.is_deployment_fault`) moves on to the next deployment; any other status is the
client's error (`upstream_errors.client_error_for`), in no deployment's health. The next deployment is
tried only before the client has seen a byte: the loop ends at an answer, after `routing.max_attempts`
calls, or when the next call would start past the request's deadline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Generic, TypeVar

from modelport.core.codec import ProtocolCodec
from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.errors import InvalidParameters, ServiceError
from modelport.gateway.first_byte import NotAnswered
from modelport.gateway.routing import Candidate, DeploymentRouter
from modelport.gateway.upstream_errors import client_error_for, is_deployment_fault, is_retryable
from modelport.net.retry_after import retry_after_seconds
from modelport.upstreams.pool import UpstreamPool
from modelport.upstreams.transport import UpstreamReply, UpstreamUnreachable

T = TypeVar("T")
CONTEXT_EXCEEDED = "context_length_exceeded"  # the error code upstreams give a request over the context window


@dataclass(frozen=True, slots=True)
class Answered(Generic[T]):
    """A deployment answered without an upstream reply to judge (the embedded model counting tokens)."""

    value: T


class Attempt(Generic[T]):
    """One kind of upstream call over a model's deployments. The base is a free call that leaves no trace:
    no health counted, no metrics; subclasses override the steps they need."""

    __slots__ = ()
    # Failures and successes count in the deployment's health (`DeploymentRouter.fail` / `succeed`).
    counts_in_health = False
    # Statuses that also move on to the next deployment (beyond retryable ones and deployment faults).
    also_next: frozenset[int] = frozenset()

    def codec(self, candidate: Candidate) -> ProtocolCodec:
        """The protocol the deployment answers in (reads its error bodies)."""
        raise NotImplementedError

    async def send(self, pool: UpstreamPool, candidate: Candidate) -> UpstreamReply | Answered[T] | None:
        """Send the call to the deployment: its reply, an answer without one, or None when this deployment
        cannot take this call (the next is tried). Raises `UpstreamUnreachable`."""
        raise NotImplementedError

    async def answered(self, candidate: Candidate, reply: UpstreamReply) -> T:
        """What a 200 becomes; raises `first_byte.NotAnswered` when it fails before anything is relayed."""
        raise NotImplementedError

    def unreachable(self, candidate: Candidate) -> None:
        """The deployment could not be reached (before the next is tried)."""

    def broke(self, candidate: Candidate, error: NotAnswered) -> None:
        """A 200 failed before anything of it was relayed (`answered` raised; the next is tried)."""

    async def refused(self, candidate: Candidate, reply: UpstreamReply) -> bytes:
        """The body of a reply other than 200, read (and the reply released) for the judge."""
        return await reply.read_all()

    def unavailable(self, candidates: list[Candidate], router: DeploymentRouter) -> T:
        """Every deployment of the model is cooling down."""
        raise NotImplementedError

    def tried(self, calls: int) -> None:
        """The loop is over (answered, failed or cancelled) after `calls` upstream calls."""

    def exhausted(self, last_status: int | None, candidates: list[Candidate], router: DeploymentRouter) -> T:
        """No deployment answered; `last_status` is the last one's status (None: it was unreachable)."""
        raise NotImplementedError


async def attempt_each(
    router: DeploymentRouter, pool: UpstreamPool, candidates: list[Candidate], attempt: Attempt[T]
) -> T:
    """Try `candidates` (a routing plan) in order, leaving out those cooling down (and a half-open one
    another request of this process is trying), until one answers: at most `routing.max_attempts` calls,
    none started past `routing.deadline_seconds`."""
    usable = [c for c in candidates if not router.is_cooling(c)]
    plain = [c for c in candidates if not c.context_only]
    if not usable:
        if len(plain) < 2:
            return attempt.unavailable(candidates, router)
        usable = plain  # every one is out: the last resort below tries the one back soonest
    counts = attempt.counts_in_health
    last_status: int | None = None
    routing = router.routing
    calls = 0
    deadline = time.monotonic() + routing.deadline_seconds
    has_context = usable[-1].context_only  # context fallbacks come last in a plan (`fallbacks.request_plan`)
    overflow: ServiceError | None = None  # the request was over a model's context window
    tried: set[str] = set()
    try:
        for candidate in usable:
            if candidate.context_only != (overflow is not None):
                continue  # context fallbacks only after an overflow, and then nothing else
            if calls >= routing.max_attempts or (calls and time.monotonic() > deadline):
                break
            if not router.admit(candidate):
                continue
            calls += 1
            tried.add(candidate.key)
            try:
                outcome = await _try(router, pool, candidate, attempt, counts, has_context)
            finally:
                router.release(candidate)
            if outcome is None:  # this deployment cannot take this call: no upstream call was made
                calls -= 1
                continue
            if isinstance(outcome, _Failed):
                last_status = outcome.status
                overflow = overflow or outcome.overflow
                continue
            return outcome.value
        if overflow is None and len(plain) > 1:
            # Every usable candidate failed, or none was usable: with several deployments a cooldown never
            # turns a request away unanswered; those left out are tried last, the one back soonest first.
            for candidate in router.by_return([c for c in plain if c.key not in tried]):
                if calls >= routing.max_attempts or (calls and time.monotonic() > deadline):
                    break
                calls += 1
                outcome = await _try(router, pool, candidate, attempt, counts, has_context)
                if isinstance(outcome, Answered):
                    return outcome.value
                if isinstance(outcome, _Failed):
                    last_status = outcome.status
    finally:
        attempt.tried(calls)
    if overflow is not None:
        raise overflow
    if calls == 0:
        return attempt.unavailable(candidates, router)
    return attempt.exhausted(last_status, candidates, router)


@dataclass(frozen=True, slots=True)
class _Failed:
    """The attempt failed in a way worth the next candidate; `status` None: the upstream was unreachable."""

    status: int | None
    # The upstream said the request is over the model's context window (the client's error to give when no
    # context fallback answers).
    overflow: ServiceError | None = None


async def _try(
    router: DeploymentRouter,
    pool: UpstreamPool,
    candidate: Candidate,
    attempt: Attempt[T],
    counts: bool,
    has_context: bool,
) -> Answered[T] | _Failed | None:
    """One call to one deployment, judged (None: the deployment cannot take this call)."""
    try:
        sent = await attempt.send(pool, candidate)
    except UpstreamUnreachable as exc:
        attempt.unreachable(candidate)
        if counts:
            router.fail(candidate, rate_limited=False, error=f"unreachable: {exc}")
        return _Failed(None)
    if sent is None:
        return None
    if isinstance(sent, Answered):
        return sent
    status = sent.status
    if status == 200:
        try:
            value = await attempt.answered(candidate, sent)
        except NotAnswered as exc:
            attempt.broke(candidate, exc)
            if has_context and exc.code == CONTEXT_EXCEEDED:
                return _Failed(400, InvalidParameters(exc.message, code=CONTEXT_EXCEEDED))
            if counts:
                router.fail(candidate, rate_limited=False, error=exc.message)
            return _Failed(502)
        if counts:
            router.succeed(candidate)
        return Answered(value)
    payload = await attempt.refused(candidate, sent)
    fault = attempt.codec(candidate).upstream_fault(payload)
    if is_retryable(status) or is_deployment_fault(status, fault) or status in attempt.also_next:
        if counts:
            excerpt = UPSTREAM_SECRETS.scrub(payload[:4096].decode("utf-8", "replace"))[:200]
            router.fail(
                candidate,
                rate_limited=status == 429,
                retry_after=retry_after_seconds(sent.headers.get("retry-after")),
                error=f"HTTP {status}: {excerpt}",
            )
        return _Failed(status)
    if has_context and fault is not None and fault.code == CONTEXT_EXCEEDED:
        return _Failed(status, client_error_for(status, fault))  # the request's size: no deployment's fault
    raise client_error_for(status, fault)
