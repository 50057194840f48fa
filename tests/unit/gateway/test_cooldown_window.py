"""DeploymentRouter health: failures counted in a window, half-open after a cooldown, doubling, weights."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from modelport.catalog_spec import Deployment, TextModel
from modelport.gateway.routing import DeploymentRouter
from modelport.settings import RoutingSettings


def _model(weights: list[int] | None = None) -> TextModel:
    weights = weights or [1, 1]
    deployments = [
        Deployment(kind="openai_chat", base_url=f"http://up{i}.test/v1", model=f"m{i}", weight=w)
        for i, w in enumerate(weights)
    ]
    return TextModel(id="acme/chat", deployments=deployments)


def _router(**routing: float) -> DeploymentRouter:
    return DeploymentRouter(cooldown_seconds=10, routing=RoutingSettings.model_validate(routing))


def test_failures_cool_a_deployment_only_within_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    router = _router(failure_window_seconds=60, failures_before_cooldown=3)
    a = router.plan(_model(), "s")[0]
    router.fail(a, rate_limited=False)
    router.fail(a, rate_limited=False)
    clock[0] += 61  # the first two left the window
    router.fail(a, rate_limited=False)
    assert not router.is_cooling(a)
    router.succeed(a)  # a success in between does not empty the window
    assert router.health()[a.key].consecutive_failures == 1
    router.fail(a, rate_limited=False)
    assert not router.is_cooling(a)
    router.succeed(a)
    router.fail(a, rate_limited=False)
    assert router.is_cooling(a)  # 3 within 60 s, not in a row


def test_the_window_starts_again_after_a_cooldown(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    router = _router(failure_window_seconds=60, failures_before_cooldown=3)
    a = router.plan(_model(), "s")[0]
    for _ in range(3):
        router.fail(a, rate_limited=False)
    assert router.is_cooling(a)
    router.fail(a, rate_limited=False)  # a request admitted before the cooldown: not counted
    assert router.health()[a.key].consecutive_failures == 3
    clock[0] += 10.5  # the cooldown (10 s) is over, the failures still within the 60 s window
    assert router.admit(a)
    router.succeed(a)  # back in rotation: the window starts again
    router.release(a)
    assert router.health()[a.key].consecutive_failures == 0
    router.fail(a, rate_limited=False)
    router.fail(a, rate_limited=False)
    assert not router.is_cooling(a)  # 2 since it came back
    router.fail(a, rate_limited=False)
    assert router.is_cooling(a)


def test_after_a_cooldown_one_request_at_a_time_and_a_failure_doubles_it(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    router = _router(failures_before_cooldown=1, max_cooldown_seconds=35)
    a = router.plan(_model(), "s")[0]
    router.fail(a, rate_limited=False)
    assert not router.admit(a) and router.health()[a.key].cooling_seconds == 10
    clock[0] += 10.5
    assert router.health()[a.key].half_open
    assert router.admit(a)  # the one trial request
    assert not router.admit(a)  # a second one waits for its outcome
    router.fail(a, rate_limited=False)
    router.release(a)
    assert router.health()[a.key].cooling_seconds == 20  # doubled
    clock[0] += 20.5
    assert router.admit(a)
    router.fail(a, rate_limited=False)
    router.release(a)
    assert router.health()[a.key].cooling_seconds == 35  # up to the ceiling
    clock[0] += 36
    assert router.admit(a)
    router.succeed(a)
    router.release(a)
    health = router.health()[a.key]
    assert not health.half_open and health.cooling_seconds == 0
    assert router.admit(a) and router.admit(a)  # healthy: no limit


def test_a_429_cools_for_its_retry_after_even_when_half_open(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    router = _router()
    a = router.plan(_model(), "s")[0]
    router.fail(a, rate_limited=True, retry_after=4)
    assert router.health()[a.key].cooling_seconds == 4
    clock[0] += 5
    router.fail(a, rate_limited=True, retry_after=3)
    assert router.health()[a.key].cooling_seconds == 3


def test_a_remote_cooldown_and_recovery_apply_without_echo() -> None:
    router = _router()
    told: list[tuple[str, float]] = []
    router.on_change = lambda key, seconds: told.append((key, seconds))
    a = router.plan(_model(), "s")[0]
    router.cool(a.key, 5, shared=False)
    assert router.is_cooling(a) and told == []
    router.recovered(a.key, shared=False)
    assert not router.is_cooling(a) and told == []
    router.fail(a, rate_limited=True, retry_after=2)
    assert told == [(a.key, 2)]
    router.succeed(a)
    assert told == [(a.key, 2), (a.key, 0.0)]


def test_weights_shape_the_rotating_start_and_zero_is_a_backup() -> None:
    router = _router()
    model = _model([3, 1, 0])
    starts = Counter(router.plan(model, None)[0].key for _ in range(400))
    assert starts == {"acme/chat#0": 300, "acme/chat#1": 100}
    assert len(router.plan(model, None)) == 3  # the weight-0 one is still tried after the others
