"""The router tells its listener (the operator alerts) when a deployment goes down after repeated failures
and when it serves again, once per change in this process; a 429's cooldown is not "down"."""

from __future__ import annotations

from modelport.catalog_spec import TextModel
from modelport.gateway.routing import FAILURES_BEFORE_COOLDOWN, DeploymentRouter
from modelport.upstreams.health import DeploymentChange


def _model() -> TextModel:
    return TextModel.model_validate(
        {"id": "p/m", "deployments": [{"kind": "openai_chat", "base_url": "http://a/v1", "model": "x"}] * 2}
    )


def test_down_and_up_are_told_once_per_change() -> None:
    heard: list[DeploymentChange] = []
    router = DeploymentRouter(cooldown_seconds=7, listener=heard.append)
    first, second = router.plan(_model(), "session")
    for i in range(FAILURES_BEFORE_COOLDOWN - 1):
        router.fail(first, rate_limited=False, error=f"HTTP 502: try {i}")
    assert heard == []  # not down before the cooldown
    router.fail(first, rate_limited=False, error="HTTP 502: last")
    router.fail(first, rate_limited=False, error="HTTP 502: again")  # still down: nothing new
    assert heard == [DeploymentChange(first.key, True, FAILURES_BEFORE_COOLDOWN, 7.0, "HTTP 502: last")]

    router.succeed(first)
    router.succeed(first)
    assert heard[1:] == [DeploymentChange(first.key, False, 0, 0.0, None)]

    # A 429 cools a deployment at once but it is not down; its first success in this process is told
    # (another process may have reported it down).
    router.fail(second, rate_limited=True, retry_after=5)
    assert len(heard) == 2
    router.succeed(second)
    assert heard[2:] == [DeploymentChange(second.key, False, 0, 0.0, None)]


def test_without_a_listener_nothing_is_tracked() -> None:
    router = DeploymentRouter()
    (candidate, _) = router.plan(_model(), None)
    for _ in range(FAILURES_BEFORE_COOLDOWN):
        router.fail(candidate, rate_limited=False)
    router.succeed(candidate)
    assert router._told == {}
