"""The one upstream attempt loop: a model's deployments in routing order (`routing.DeploymentRouter.plan`),
those cooling down left out, each sent the call until one answers, each answer judged.

Every upstream call of the gateway goes through `attempt_each`: a text request (`upstream_call.UpstreamCaller.open`)
and a token count (`count_tokens`). What differs between them is an `Attempt`: how a deployment is sent the
call, what an answer becomes, whether failures count against the deployment's health (a real call's do;
a free count's do not), and what is left when no deployment answered.

The judge: a 200 answers. A connection failure, a retryable status (429, 5xx) or a deployment fault (a
404 the upstream says is about the model, `upstream_errors.is_deployment_fault`) moves on to the next
deployment; any other status is the client's error (`upstream_errors.client_error_for`), in no deployment's
health. The next deployment is tried only before the client has seen a byte: the loop ends at an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from modelport.core.codec import ProtocolCodec
from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.gateway.routing import Candidate, DeploymentRouter
from modelport.gateway.upstream_errors import client_error_for, is_deployment_fault, is_retryable
from modelport.net.retry_after import retry_after_seconds
from modelport.upstreams.pool import UpstreamPool
from modelport.upstreams.transport import UpstreamReply, UpstreamUnreachable

T = TypeVar("T")


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
        """What a 200 becomes."""
        raise NotImplementedError

    def unreachable(self, candidate: Candidate) -> None:
        """The deployment could not be reached (before the next is tried)."""

    async def refused(self, candidate: Candidate, reply: UpstreamReply) -> bytes:
        """The body of a reply other than 200, read (and the reply released) for the judge."""
        return await reply.read_all()

    def unavailable(self, candidates: list[Candidate], router: DeploymentRouter) -> T:
        """Every deployment of the model is cooling down."""
        raise NotImplementedError

    def exhausted(self, last_status: int | None, candidates: list[Candidate], router: DeploymentRouter) -> T:
        """No deployment answered; `last_status` is the last one's status (None: it was unreachable)."""
        raise NotImplementedError


async def attempt_each(
    router: DeploymentRouter, pool: UpstreamPool, candidates: list[Candidate], attempt: Attempt[T]
) -> T:
    """Try `candidates` (a routing plan) in order, leaving out those cooling down, until one answers."""
    usable = [c for c in candidates if not router.is_cooling(c)]
    if not usable:
        return attempt.unavailable(candidates, router)
    counts = attempt.counts_in_health
    last_status: int | None = None
    for candidate in usable:
        try:
            sent = await attempt.send(pool, candidate)
        except UpstreamUnreachable as exc:
            attempt.unreachable(candidate)
            if counts:
                router.fail(candidate, rate_limited=False, error=f"unreachable: {exc}")
            last_status = None
            continue
        if sent is None:
            continue
        if isinstance(sent, Answered):
            return sent.value
        status = sent.status
        if status == 200:
            if counts:
                router.succeed(candidate)
            return await attempt.answered(candidate, sent)
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
            last_status = status
            continue
        raise client_error_for(status, fault)
    return attempt.exhausted(last_status, candidates, router)
