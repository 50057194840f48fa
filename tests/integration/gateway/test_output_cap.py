"""The output cap the balance hold was sized on reaches every upstream kind when the client sends none
(issue 9 item 7): otherwise the upstream may answer far past the hold and the team goes below zero."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import Gateway

USER = [{"role": "user", "content": "Hi"}]
# The catalog's default_max_output_tokens of every fake model (tests/integration/gateway/conftest.py).
DEFAULT_CAP = 100
CAP_FIELD = {
    "openai_chat": "max_completion_tokens",
    "openai_compatible": "max_tokens",
    "openai_responses": "max_output_tokens",
    "anthropic": "max_tokens",
}
MODEL_KIND = {"fake/chat": "openai_chat", "fake/compat": "openai_compatible", "fake/responses": "openai_responses"}


def _bodies(model: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("/v1/chat/completions", {"model": model, "messages": USER}),
        ("/v1/responses", {"model": model, "input": "Hi"}),
    ]


@pytest.mark.parametrize("model", sorted(MODEL_KIND))
@pytest.mark.parametrize("stream", [False, True])
def test_cap_sent_when_the_client_sends_none(gw: Gateway, model: str, stream: bool) -> None:
    key = gw.new_team(f"cap-{model.split('/')[1]}-{stream}")
    for path, body in _bodies(model):
        gw.upstream.reset()
        r = httpx.post(
            gw.server.text_url + path,
            json={**body, "stream": stream},
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        sent = gw.upstream.last_request
        assert sent is not None
        field = CAP_FIELD[MODEL_KIND[model]]
        caps = {sent.json.get(field)}
        if MODEL_KIND[model] == "openai_compatible":  # translated Chat bodies name it the newer way
            caps |= {sent.json.get("max_completion_tokens")}
        assert DEFAULT_CAP in caps, (path, field, sent.json)


def test_a_client_cap_is_kept(gw: Gateway) -> None:
    key = gw.new_team("cap-own")
    r = httpx.post(
        gw.server.text_url + "/v1/chat/completions",
        json={"model": "fake/chat", "messages": USER, "max_tokens": 7},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert r.status_code == 200
    sent = gw.upstream.last_request
    assert sent is not None and sent.json.get("max_tokens") == 7
    assert "max_completion_tokens" not in sent.json
