"""Output caps (issue 20 rule 3, docs/api/text-gateway.md, Billing): the gateway sends no cap the client did not
ask for and never a smaller one than it asked for, as long as the team's credit covers the model's maximum output.
A team whose credit covers less gets a cap equal to what its credit covers (at least `credit.min_output_tokens`,
else 402), on every path. A translated path whose upstream protocol requires a cap sends the model's maximum."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import Gateway

USER = [{"role": "user", "content": "Hi"}]
# tests/integration/gateway/conftest.py: every fake model's max_output_tokens, and its prices (micro-USD/token).
MODEL_MAX = 32000
INPUT_RATE, OUTPUT_RATE = 1, 2
# "Hi" is estimated at 2 // 4 + 16 input tokens (billing.pricing.estimate_input_tokens).
INPUT_ESTIMATE = 16
CAP_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
MODEL_KIND = {"fake/chat": "openai_chat", "fake/compat": "openai_compatible", "fake/responses": "openai_responses"}
KIND_FIELD = {"openai_chat": "max_completion_tokens", "openai_compatible": "max_tokens"}


def _bodies(model: str) -> list[tuple[str, dict[str, Any]]]:
    return [(path, _body(path, model)) for path in ("/v1/chat/completions", "/v1/responses")]


def _send(gw: Gateway, key: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(gw.server.text_url + path, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _caps(sent: dict[str, Any]) -> dict[str, Any]:
    return {name: sent[name] for name in CAP_FIELDS if name in sent}


@pytest.mark.parametrize("model", sorted(MODEL_KIND))
@pytest.mark.parametrize("stream", [False, True])
def test_no_cap_is_added_when_the_credit_covers_the_maximum(gw: Gateway, model: str, stream: bool) -> None:
    key = gw.new_team(f"nocap-{model.split('/')[1]}-{stream}")
    for path, body in _bodies(model):
        gw.upstream.reset()
        r = _send(gw, key, path, {**body, "stream": stream})
        assert r.status_code == 200, r.text
        sent = gw.upstream.last_request
        assert sent is not None
        same_protocol = (path == "/v1/responses") == (MODEL_KIND[model] == "openai_responses")
        if same_protocol:
            assert _caps(sent.json) == {}, (path, sent.json)
        else:  # translated between OpenAI protocols: still no cap, the client set none
            assert not any(isinstance(v, int) for v in _caps(sent.json).values()), (path, sent.json)


def test_a_client_cap_is_kept(gw: Gateway) -> None:
    key = gw.new_team("cap-own")
    r = _send(gw, key, "/v1/chat/completions", {"model": "fake/chat", "messages": USER, "max_tokens": 7})
    assert r.status_code == 200
    sent = gw.upstream.last_request
    assert sent is not None and _caps(sent.json) == {"max_tokens": 7}


def test_a_messages_upstream_gets_the_models_maximum_when_the_client_set_none(gw: Gateway) -> None:
    key = gw.new_team("cap-translated-anthropic")
    for path, body in _bodies("fake/claude"):
        gw.upstream.reset()
        r = _send(gw, key, path, body)
        assert r.status_code == 200, r.text
        sent = gw.upstream.last_request
        assert sent is not None
        assert sent.json["max_tokens"] == MODEL_MAX, (path, sent.json)


def _covered(balance_micros: int) -> int:
    """The cap a balance covers: the largest output whose estimate, rounded half up, fits in it."""
    return math.ceil((balance_micros + 0.5 - INPUT_ESTIMATE * INPUT_RATE) / OUTPUT_RATE) - 1


def _body(path: str, model: str) -> dict[str, Any]:
    if path == "/v1/responses":
        return {"model": model, "input": "Hi"}
    return {"model": model, "messages": USER}


# (team, client path, model, client body extras, the field that must carry the cap upstream)
SHORT_OF_CREDIT = [
    ("short-chat", "/v1/chat/completions", "fake/chat", {}, "max_completion_tokens"),
    ("short-compat", "/v1/chat/completions", "fake/compat", {}, "max_tokens"),
    ("short-chat-own", "/v1/chat/completions", "fake/chat", {"max_tokens": 20000}, "max_tokens"),
    ("short-responses", "/v1/responses", "fake/responses", {"stream": True}, "max_output_tokens"),
    ("short-messages", "/v1/messages", "fake/claude", {"max_tokens": 50000}, "max_tokens"),
    # Translated: the cap instead of the model's maximum, and between the two OpenAI protocols.
    ("short-chat-claude", "/v1/chat/completions", "fake/claude", {}, "max_tokens"),
    ("short-responses-chat", "/v1/responses", "fake/chat", {}, "max_completion_tokens"),
]


@pytest.mark.parametrize(
    ("team", "path", "model", "extra", "field"), SHORT_OF_CREDIT, ids=[c[0] for c in SHORT_OF_CREDIT]
)
def test_a_team_short_of_credit_gets_the_cap_its_credit_covers(
    gw: Gateway, team: str, path: str, model: str, extra: dict[str, Any], field: str
) -> None:
    balance = 10_000  # micro-USD: ~5,000 output tokens, against 64,016 for the model's maximum
    key = gw.new_team(team, usd="0.01")
    gw.upstream.reset()
    r = _send(gw, key, path, {**_body(path, model), **extra})
    assert r.status_code == 200, r.text
    sent = gw.upstream.last_request
    assert sent is not None
    cap = _covered(balance)
    assert 1024 <= cap < MODEL_MAX
    assert sent.json[field] == cap, sent.json
    assert INPUT_ESTIMATE * INPUT_RATE + cap * OUTPUT_RATE <= balance


def test_a_team_that_cannot_cover_the_minimum_cap_gets_402(gw: Gateway) -> None:
    key = gw.new_team("short-of-minimum", usd="0.002")  # 2,000 micro-USD < 16 + 1,024 x 2
    gw.upstream.reset()
    r = _send(gw, key, "/v1/chat/completions", {"model": "fake/chat", "messages": USER})
    assert r.status_code == 402 and r.json()["error"]["type"] == "insufficient_quota"
    assert gw.upstream.call_count() == 0
    # A request whose own cap it can cover is still served, untouched.
    r = _send(gw, key, "/v1/chat/completions", {"model": "fake/chat", "messages": USER, "max_tokens": 100})
    assert r.status_code == 200, r.text
    sent = gw.upstream.last_request
    assert sent is not None and _caps(sent.json) == {"max_tokens": 100}


# Issue 33 item 9: an output cap past any model's maximum (a 32-bit integer) is a 400 naming the field, in the
# route's own error shape, before any upstream call; the Responses echo of the cap never fails.
HUGE_CAP = 10**30  # sent as a JSON integer literal, past 64 bits
CEILING = 2**31 - 1
HUGE_CAPS = [
    ("/v1/responses", "local/smollm2-135m-instruct", "max_output_tokens"),  # the embedded model: the case
    ("/v1/responses", "fake/chat", "max_output_tokens"),
    ("/v1/responses", "fake/responses", "max_output_tokens"),
    ("/v1/chat/completions", "fake/chat", "max_tokens"),
    ("/v1/chat/completions", "fake/responses", "max_completion_tokens"),
    ("/v1/messages", "fake/claude", "max_tokens"),
    ("/v1/messages", "fake/chat", "max_tokens"),
]


@pytest.mark.parametrize(("path", "model", "field"), HUGE_CAPS, ids=[f"{p}-{m}-{f}" for p, m, f in HUGE_CAPS])
@pytest.mark.parametrize("cap", [HUGE_CAP, CEILING + 1])
def test_an_output_cap_past_any_models_maximum_is_400_before_the_upstream(
    gw: Gateway, path: str, model: str, field: str, cap: int
) -> None:
    body = {**_body(path, model), field: cap}
    r = _send(gw, gw.key, path, body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and field in error["message"], error
    if path == "/v1/messages":
        assert r.json()["type"] == "error"  # the Messages shape (it has no `param`)
    else:
        assert error["param"] == field
    assert gw.upstream.call_count() == 0


def test_the_largest_cap_is_accepted_and_echoed(gw: Gateway) -> None:
    r = _send(gw, gw.key, "/v1/responses", {"model": "fake/chat", "input": "Hi", "max_output_tokens": CEILING})
    assert r.status_code == 200, r.text
    assert r.json()["max_output_tokens"] == CEILING
    sent = gw.upstream.last_request
    assert sent is not None and sent.json["max_completion_tokens"] == CEILING
