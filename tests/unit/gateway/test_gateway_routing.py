"""DeploymentRouter: session affinity, rotation, cooldowns (per process, in memory)."""

from __future__ import annotations

from modelport.catalog_spec import Deployment, TextModel
from modelport.gateway.routing import FAILURES_BEFORE_COOLDOWN, DeploymentRouter


def model(n: int) -> TextModel:
    deployments = [Deployment(kind="openai_chat", base_url=f"http://up{i}.test/v1", model=f"m{i}") for i in range(n)]
    return TextModel(id="acme/chat", deployments=deployments)


def test_a_session_stays_on_one_deployment_and_sessions_spread() -> None:
    router, m = DeploymentRouter(), model(4)
    first = {router.plan(m, "session-a")[0].key for _ in range(20)}
    assert len(first) == 1
    chosen = {router.plan(m, f"session-{i}")[0].key for i in range(64)}
    assert len(chosen) == 4  # rendezvous hashing uses every deployment


def test_without_a_session_the_start_rotates() -> None:
    router, m = DeploymentRouter(), model(3)
    starts = [router.plan(m, None)[0].key for _ in range(6)]
    assert starts[:3] == ["acme/chat#0", "acme/chat#1", "acme/chat#2"] and starts[3:] == starts[:3]


def test_a_429_cools_at_once_other_failures_after_a_streak() -> None:
    router, m = DeploymentRouter(cooldown_seconds=30), model(2)
    a, b = router.plan(m, "s")
    router.fail(a, rate_limited=True, retry_after=5)
    assert router.is_cooling(a) and router.plan(m, "s")[-1] == a  # tried last while cooling
    assert 1 <= router.retry_after([a]) <= 5
    for _ in range(FAILURES_BEFORE_COOLDOWN - 1):
        router.fail(b, rate_limited=False)
    assert not router.is_cooling(b)
    router.fail(b, rate_limited=False)
    assert router.is_cooling(b)
    router.succeed(a)
    assert not router.is_cooling(a) and router.plan(m, "s")[0] == a
