"""An upstream that reports absurd usage (10**30 tokens, 1e30 as a float, negative or fractional counts)
cannot break settlement: each count is clamped to `MAX_TOKENS` (or taken as 0), the charge stays bounded,
the client gets its answer, the request is logged and the ledger adds up. Fast and translated paths,
streaming and not."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import Gateway
from tests.integration.gateway.test_gateway_behaviour import _wait_logs
from tests.support.fake_upstream import Reply, Usage

MAX_TOKENS = 10**9
TOPUP_MICROS = 10_000_000

# client path, model: the fast path when the upstream speaks the client's protocol, else translated.
ROUTES: dict[str, tuple[str, str]] = {
    "chat-fast": ("/v1/chat/completions", "fake/chat"),
    "messages-fast": ("/v1/messages", "fake/claude"),
    "chat-translated": ("/v1/chat/completions", "fake/claude"),
    "messages-translated": ("/v1/messages", "fake/chat"),
}


def _body(path: str, model: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "stream": stream}
    if path == "/v1/messages":
        body["max_tokens"] = 50
    return body


def _ask(gw: Gateway, key: str, route: str, stream: bool) -> str:
    """The answer's raw text (body or every SSE line); asserts a 200."""
    path, model = ROUTES[route]
    headers = {"Authorization": f"Bearer {key}"}
    url = gw.server.text_url + path
    if not stream:
        r = httpx.post(url, json=_body(path, model, False), headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        return r.text
    with httpx.stream("POST", url, json=_body(path, model, True), headers=headers, timeout=30) as r:
        assert r.status_code == 200
        return "\n".join(r.iter_lines())


def _settled_ledger(gw: Gateway, key: str, team: str) -> int:
    deadline = time.monotonic() + 15
    while gw.balance(key)["frozen_balance"] != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gw.balance(key)["frozen_balance"] == 0
    entries = gw.admin("GET", f"/teams/{team}/ledger").json()["data"]["entries"]
    return sum(int(e["amount_micros"]) for e in entries)


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_huge_usage_is_clamped_and_settled(gw: Gateway, route: str, stream: bool) -> None:
    team = f"huge-{route}-{int(stream)}"
    key = gw.new_team(team, usd="10")
    # An int past 64 bits for input and a float past them for output (JSON `1e+30`).
    huge = Usage(input_tokens=10**30, output_tokens=1e30)  # type: ignore[arg-type]
    gw.upstream.push(Reply.text("still answered", usage=huge))
    text = _ask(gw, key, route, stream)
    assert "answered" in text
    rows = _wait_logs(gw, key, 1)
    assert len(rows) == 1, rows
    row = rows[0]
    assert row["status"] == "success", row
    assert (row["prompt_tokens"], row["completion_tokens"]) == (MAX_TOKENS, MAX_TOKENS)
    cost_micros = int(Decimal(str(row["cost"])) * 1_000_000)
    assert cost_micros == MAX_TOKENS * 1 + MAX_TOKENS * 2  # the catalog's prices: 1 and 2 USD per 1M tokens
    assert _settled_ledger(gw, key, team) == TOPUP_MICROS - cost_micros


@pytest.mark.parametrize(("route", "stream"), [("chat-fast", False), ("messages-translated", True)])
def test_negative_and_fractional_usage_count_as_zero(gw: Gateway, route: str, stream: bool) -> None:
    team = f"junk-{route}-{int(stream)}"
    key = gw.new_team(team, usd="10")
    junk = Usage(input_tokens=-500, output_tokens=12.5)  # type: ignore[arg-type]
    gw.upstream.push(Reply.text("still answered", usage=junk))
    assert "answered" in _ask(gw, key, route, stream)
    rows = _wait_logs(gw, key, 1)
    assert len(rows) == 1 and rows[0]["status"] == "success", rows
    assert (rows[0]["prompt_tokens"], rows[0]["completion_tokens"]) == (0, 0)
    assert _settled_ledger(gw, key, team) == TOPUP_MICROS
