"""The one upstream attempt loop: deployments in plan order, those cooling down left out, each reply judged;
a call's `Attempt` says whether its outcomes count in the deployments' health."""

from __future__ import annotations

import pytest

from modelport.catalog_spec import Deployment
from modelport.core.codec import ProtocolCodec
from modelport.errors import InvalidParameters
from modelport.gateway.attempts import Answered, Attempt, attempt_each
from modelport.gateway.routing import Candidate, DeploymentRouter
from modelport.protocols import get_codec
from modelport.upstreams.pool import UpstreamPool
from modelport.upstreams.transport import UpstreamReply, UpstreamUnreachable

CANDIDATES = [
    Candidate(f"acme/chat#{i}", Deployment(kind="openai_chat", model="m", base_url=f"http://x{i}")) for i in range(3)
]


class Scripted(Attempt[str]):
    """Each deployment answers as scripted: a status, `None` (cannot take the call), `"down"` (unreachable)
    or `"answer"` (answered without a reply)."""

    def __init__(self, script: list[int | str | None], *, counts: bool) -> None:
        self.script = dict(zip((c.key for c in CANDIDATES), script, strict=True))
        self.counts_in_health = counts
        self.sent: list[str] = []

    def codec(self, candidate: Candidate) -> ProtocolCodec:
        return get_codec("openai_chat")

    async def send(self, pool: UpstreamPool, candidate: Candidate) -> UpstreamReply | Answered[str] | None:
        self.sent.append(candidate.key)
        step = self.script[candidate.key]
        if step == "down":
            raise UpstreamUnreachable("refused")
        if step == "answer":
            return Answered(f"answered by {candidate.key}")
        if step is None:
            return None
        assert isinstance(step, int)
        return UpstreamReply(step, {}, body=b'{"error": {"message": "no"}}')

    async def answered(self, candidate: Candidate, reply: UpstreamReply) -> str:
        return f"200 from {candidate.key}"

    def unavailable(self, candidates: list[Candidate], router: DeploymentRouter) -> str:
        return "unavailable"

    def exhausted(self, last_status: int | None, candidates: list[Candidate], router: DeploymentRouter) -> str:
        return f"exhausted after {last_status}"


async def run(attempt: Scripted, router: DeploymentRouter | None = None) -> str:
    return await attempt_each(router or DeploymentRouter(), UpstreamPool(), CANDIDATES, attempt)


async def test_failures_before_an_answer_move_on_in_plan_order() -> None:
    attempt = Scripted(["down", 503, 200], counts=True)
    assert await run(attempt) == "200 from acme/chat#2"
    assert attempt.sent == ["acme/chat#0", "acme/chat#1", "acme/chat#2"]


async def test_a_deployment_that_cannot_take_the_call_is_passed_over_and_an_answer_needs_no_reply() -> None:
    attempt = Scripted([None, "answer", 200], counts=False)
    assert await run(attempt) == "answered by acme/chat#1"
    assert attempt.sent == ["acme/chat#0", "acme/chat#1"]


async def test_a_clients_error_ends_the_loop_and_no_answer_is_exhausted() -> None:
    with pytest.raises(InvalidParameters):
        await run(Scripted([400, 200, 200], counts=True))
    assert await run(Scripted([503, "down", 429], counts=True)) == "exhausted after 429"


@pytest.mark.parametrize("counts", [True, False])
async def test_only_an_attempt_that_counts_in_health_cools_a_deployment(counts: bool) -> None:
    router = DeploymentRouter()
    await run(Scripted([429, 200, 200], counts=counts), router)
    assert router.is_cooling(CANDIDATES[0]) is counts
    if counts:  # left out next time; all of them cooling: the one back soonest is tried, once
        attempt = Scripted([200, 200, 200], counts=True)
        assert await run(attempt, router) == "200 from acme/chat#1" and attempt.sent == ["acme/chat#1"]
        for candidate in CANDIDATES:
            router.fail(candidate, rate_limited=True)
        last = Scripted([429, 200, 200], counts=True)
        assert await run(last, router) == "200 from acme/chat#1" and last.sent == ["acme/chat#0", "acme/chat#1"]
        assert await run(Scripted([200, 200, 200], counts=True), router) == "200 from acme/chat#1"  # back
