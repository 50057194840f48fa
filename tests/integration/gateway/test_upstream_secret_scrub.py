"""An upstream that quotes the key it was sent never gets it to the tenant or the request log (issue 21
item 4): relayed error answers, error events in streams (fast and translated paths) and log rows have
every configured upstream secret removed, the bare value and its `Bearer ` form."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import SINGLE, Gateway
from tests.integration.gateway.test_gateway_behaviour import _wait_logs
from tests.support.fake_upstream import Reply

SECRET = "sk-upstream-secret"  # the fixture's FAKE_UPSTREAM_KEY
QUOTING = f"Incorrect API key provided: {SECRET}. You sent 'Authorization: Bearer {SECRET}'."
CLIENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "messages": ("/v1/messages", {"max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}),
    "chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]}),
    "responses": ("/v1/responses", {"input": "Hi"}),
}


def _call(gw: Gateway, key: str, client: str, model: str, stream: bool) -> str:
    path, body = CLIENTS[client]
    with httpx.stream(
        "POST",
        gw.server.text_url + path,
        json={**body, "model": model, "stream": stream},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    ) as r:
        return r.read().decode()


def _assert_clean(gw: Gateway, key: str, answer: str) -> None:
    assert SECRET not in answer, answer
    rows = _wait_logs(gw, key, 1)
    assert len(rows) == 1 and rows[0]["status"] == "error", rows
    assert SECRET not in str(rows[0]), rows[0]


@pytest.mark.parametrize("model", sorted(SINGLE))
def test_quoted_key_in_an_error_answer_is_removed(gw: Gateway, model: str) -> None:
    key = gw.new_team(f"scrub-answer-{model.replace('/', '-')}", usd="1")
    gw.upstream.push(Reply.error(400, QUOTING))
    answer = _call(gw, key, "chat", model, stream=False)
    assert "[redacted]" in answer, answer
    _assert_clean(gw, key, answer)


@pytest.mark.parametrize(("client", "model"), [(c, m) for c in sorted(CLIENTS) for m in ("fake/chat", "fake/claude")])
def test_quoted_key_in_a_stream_error_event_is_removed(gw: Gateway, client: str, model: str) -> None:
    key = gw.new_team(f"scrub-stream-{client}-{model.replace('/', '-')}", usd="1")
    # After content (Messages sends 3 events first): an error before it is retried instead, never relayed.
    gw.upstream.push(Reply.text("some words of an answer", error_after=5, error_message=QUOTING))
    answer = _call(gw, key, client, model, stream=True)
    assert "[redacted]" in answer, answer
    _assert_clean(gw, key, answer)
