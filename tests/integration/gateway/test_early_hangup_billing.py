"""A client that hangs up right after a stream's first event is billed at least its input tokens, on every
pair of client protocol and upstream kind (issue 21 item 15).

Before: a translated stream relays no text before the hang-up (its first event is `response.created` or a
role chunk) and the upstream's usage comes only at the end, so the request was logged `cancelled` with no
usage and cost 0 although the upstream was called and did the work.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import SINGLE, Gateway
from tests.integration.gateway.test_gateway_behaviour import _wait_logs
from tests.support.fake_upstream import Reply, Usage

WORDS = " ".join(f"word{i}" for i in range(40))
PROMPT = "Please write forty words about the sea. " * 4
CLIENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "messages": ("/v1/messages", {"max_tokens": 200, "messages": [{"role": "user", "content": PROMPT}]}),
    "chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPT}]}),
    "responses": ("/v1/responses", {"input": PROMPT}),
}
PAIRS = [(client, model) for client in sorted(CLIENTS) for model in sorted(SINGLE)]


@pytest.mark.parametrize(("client", "model"), PAIRS)
def test_hangup_after_first_event_is_billed_its_input(gw: Gateway, client: str, model: str) -> None:
    key = gw.new_team(f"hangup-{client}-{model.replace('/', '-')}", usd="1")
    # The upstream serves its whole answer slowly; its usage arrives only with the last events.
    gw.upstream.push(Reply.text(WORDS, usage=Usage(input_tokens=30, output_tokens=40), chunk_delay=0.05))
    path, body = CLIENTS[client]
    with httpx.stream(
        "POST",
        gw.server.text_url + path,
        json={**body, "model": model, "stream": True},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    ) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                break  # hang up right after the first event
    rows = _wait_logs(gw, key, 1)
    assert len(rows) == 1, rows
    row = rows[0]
    assert row["status"] == "cancelled", row
    assert int(str(row["prompt_tokens"])) >= 16, row  # the upstream's input, or the estimate of it
    assert Decimal(str(row["cost"])) > 0, row


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_hangup_before_a_non_streaming_answer_is_billed_its_input(gw: Gateway, client: str) -> None:
    key = gw.new_team(f"hangup-wait-{client}", usd="1")
    gw.upstream.push(Reply.text(WORDS, usage=Usage(input_tokens=30, output_tokens=40), delay=3))
    path, body = CLIENTS[client]
    with pytest.raises(httpx.TimeoutException):
        httpx.post(
            gw.server.text_url + path,
            json={**body, "model": "fake/chat"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=httpx.Timeout(30, read=1),  # the client gives up while the upstream still works
        )
    rows = _wait_logs(gw, key, 1)
    assert len(rows) == 1, rows
    assert rows[0]["status"] == "cancelled", rows[0]
    assert int(str(rows[0]["prompt_tokens"])) >= 16 and Decimal(str(rows[0]["cost"])) > 0, rows[0]
