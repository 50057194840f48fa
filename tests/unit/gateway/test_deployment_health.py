"""The router's view of deployment health (read by the operator console) and the console's URL masking."""

from __future__ import annotations

from modelport.catalog_spec import TextModel
from modelport.console.operator.common import masked_url
from modelport.gateway.routing import FAILURES_BEFORE_COOLDOWN, DeploymentRouter


def _model() -> TextModel:
    return TextModel.model_validate(
        {"id": "p/m", "deployments": [{"kind": "openai_chat", "base_url": "http://a/v1", "model": "x"}] * 2}
    )


def test_health_reports_failures_cooldowns_and_the_last_errors_newest_first() -> None:
    router = DeploymentRouter(cooldown_seconds=30)
    assert router.health() == {}
    first, second = router.plan(_model(), "session")
    for i in range(FAILURES_BEFORE_COOLDOWN):
        router.fail(first, rate_limited=False, error=f"HTTP 502: try {i}")
    router.fail(second, rate_limited=True, error="")
    health = router.health()
    one, two = health[first.key], health[second.key]
    assert one.consecutive_failures == FAILURES_BEFORE_COOLDOWN and 29 < one.cooling_seconds <= 30
    assert [e.message for e in one.recent_errors] == ["HTTP 502: try 2", "HTTP 502: try 1", "HTTP 502: try 0"]
    assert two.cooling_seconds > 0 and two.recent_errors[0].message == "rate limited"
    for i in range(10):
        router.fail(first, rate_limited=False, error=f"e{i}")
    assert len(router.health()[first.key].recent_errors) == 5
    router.succeed(first)
    after = router.health()[first.key]
    assert after.consecutive_failures == 0 and after.cooling_seconds == 0
    assert after.recent_errors[0].message == "e9"  # the history stays for the operator


def test_urls_lose_their_credentials() -> None:
    assert masked_url("https://user:pw@up.example/v1?key=abc&x=1") == "https://••••••@up.example/v1?key=••••••&x=••••••"
    assert masked_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert masked_url(None) == "-"
